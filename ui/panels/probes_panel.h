#pragma once

#include "jobs/run_metatypes.h"

#include <QWidget>

class QComboBox;
class QCustomPlot;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace torchscope {

class ActivationCache;

class Document;
class JobSetupColumn;
class RunController;

// Linear probes on the model's layers: train one on the selected layer, or sweep the ticked
// layers, from a labelled folder (one subfolder per class). Shows validation accuracy by layer
// (the best marked here and in the module tree), loss curves and the confusion matrix; exports a
// probe as TorchScript or a state dict, and imports one to score the window's images.
class ProbesPanel : public QWidget {
    Q_OBJECT
public:
    ProbesPanel(Document* document, RunController* controller, QWidget* parent = nullptr);

    void setDataFolder(const QString& folder);
    QString dataFolder() const;
    // The layer of the selected grab (the activation view's key), or "".
    QString selectedLayer() const;
    // Ticked output grabs, in module tree order.
    QStringList tickedLayers() const;
    void train(const QStringList& layers);
    // The trained probe of `layer` written as a module (or its state_dict); message() says when.
    void exportProbeTo(const QString& layer, const QString& path, bool stateDict);
    // A probe file's class probabilities for `images`; scoresShown() when they are in the table.
    void applyProbeFile(const QString& path, const QStringList& images);

    ProbeResultPtr lastResult() const { return result_; }
    QCustomPlot* sweepPlot() const { return sweepPlot_; }
    // Writes the accuracy-by-layer plot to .png or .pdf, atomically. Returns an error or "".
    QString saveSweepPlot(const QString& path) const;

Q_SIGNALS:
    void finished(const torchscope::ProbeResultPtr& snapshot);
    void failed(const QString& title, const QString& message);
    void message(const QString& text);
    void scoresShown(const torchscope::ProbeScoresPtr& scores);

private:
    void showResult(const ProbeResultPtr& snapshot);
    void showLayer(int index);
    void showScores(const ProbeScoresPtr& scores);
    void buildSetupColumn();
    QWidget* buildResultsColumn();
    void connectJobs();
    void resetForModel();
    void exportProbe(bool stateDict);
    void importProbe();

    Document* document_;
    RunController* controller_;
    JobSetupColumn* column_;
    QLineEdit* folder_;
    QComboBox* pooling_;
    QSpinBox* seed_;
    QPushButton* trainButton_;
    QPushButton* sweepButton_;
    QCustomPlot* sweepPlot_;
    QComboBox* layerChoice_;
    QCustomPlot* lossPlot_;
    QTableWidget* confusion_;
    QTableWidget* scores_;
    ProbeResultPtr result_;
    std::shared_ptr<ActivationCache> cache_; // activations kept across trainings
};

} // namespace torchscope
