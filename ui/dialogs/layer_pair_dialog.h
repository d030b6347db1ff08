#pragma once

// Two layers' channel maps for one image side by side: the pair of a CKA heat map cell that was
// clicked (A's layer, B's layer), or the float64 and float32 runs of one layer.

#include "jobs/compare_types.h"

#include <QDialog>

class QLabel;

namespace torchscope {

class ChannelGrid;
class ColorBar;

class LayerPairDialog : public QDialog {
    Q_OBJECT
public:
    explicit LayerPairDialog(QWidget* parent = nullptr);

    void showMaps(const LayerPairResult& maps, const QString& titleA, const QString& titleB);
    ChannelGrid* gridA() const { return gridA_; }
    ChannelGrid* gridB() const { return gridB_; }
    ColorBar* colorBarB() const { return barB_; } // the shared one when both sides are one layer

private:
    QLabel* header_;
    QLabel* titleA_;
    QLabel* titleB_;
    ChannelGrid* gridA_;
    ChannelGrid* gridB_;
    ColorBar* barA_;
    ColorBar* barB_;
};

} // namespace torchscope
