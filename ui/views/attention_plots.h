#pragma once

// The Attention tab's per-head figures over the images: each head's mean attention distance
// (pixels) and entropy (nats) against its layer, a dot per head (Dosovitskiy et al. 2021, Fig. 7).
// The picked head is drawn larger.

#include "jobs/run_metatypes.h"

#include <QWidget>

class QCustomPlot;

namespace torchscope {

class AttentionPlots : public QWidget {
    Q_OBJECT
public:
    explicit AttentionPlots(QWidget* parent = nullptr);

    void setResult(const AttentionWorkbenchResultPtr& result);
    void setPicked(int layer, int head);
    void clear();
    QCustomPlot* distancePlot() const { return distance_; }
    QCustomPlot* entropyPlot() const { return entropy_; }

private:
    void draw();

    AttentionWorkbenchResultPtr result_;
    QCustomPlot* distance_;
    QCustomPlot* entropy_;
    int pickedLayer_ = -1, pickedHead_ = -1;
};

} // namespace torchscope
