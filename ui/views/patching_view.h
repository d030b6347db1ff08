#pragma once

#include "jobs/run_metatypes.h"

#include <QWidget>

class QComboBox;
class QHBoxLayout;
class QLabel;
class QLineEdit;

namespace torchscope {

class ChannelGrid;
class Document;
class RunController;

// Activation patching and ablation side by side: image A, image B and A with B's activation of
// a layer (or A with channels of the layer zeroed), each with its top predictions and a later
// layer's map on one shared colour scale. The difference mode shows the layer itself for A, B and
// A − B, channels ranked by how much A and B differ there.
class PatchingView : public QWidget {
    Q_OBJECT
public:
    PatchingView(Document* document, RunController* controller, QWidget* parent = nullptr);

    // Selects images by their index in the Document, the layers by path; ablate with channels.
    enum class Mode { Patch, Ablate, Difference };
    void setup(int imageA, int imageB, const QString& layer, const QString& compareLayer, bool ablate = false,
        const QString& channels = {});
    void setMode(Mode mode);
    // The difference mode's rows: A, B and A − B of the most different channels.
    QList<ChannelGrid*> differenceGrids() const;
    void compute();
    PatchResultPtr lastResult() const { return result_; }

Q_SIGNALS:
    void finished(const torchscope::PatchResultPtr& snapshot);
    void failed(const QString& title, const QString& message);

private:
    void fillChoices();
    void showResult(const PatchResultPtr& snapshot);
    void showDifference(const InputDifference& difference);

    Document* document_;
    RunController* controller_;
    QComboBox* imageA_;
    QComboBox* imageB_;
    QComboBox* layer_;
    QComboBox* mode_;
    QLineEdit* channels_;
    QComboBox* compare_;
    QLabel* header_;
    QHBoxLayout* columns_;
    QWidget* differenceBox_;
    PatchResultPtr result_;
};

} // namespace torchscope
