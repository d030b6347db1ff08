#pragma once

// The Compare tab: two models (CKA between every pair of layers), two checkpoints (per-layer CKA,
// cosine and relative L2 on the same inputs) or one model in several precisions against float64,
// over a folder of images. Sets up the run, shows its progress, draws the heat map and the drift
// plot, opens a clicked pair's layer maps for the selected image, and exports.

#include "jobs/compare_types.h"
#include "jobs/job_handle.h"

#include <QPointer>
#include <QWidget>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QHBoxLayout;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;

namespace torchscope {

class CkaHeatMap;
class Document;
class DriftPlot;
class JobSetupColumn;
class RunController;

class ComparePanel : public QWidget {
    Q_OBJECT
public:
    ComparePanel(Document* document, RunController* controller, QWidget* parent = nullptr);
    ~ComparePanel() override;

    QComboBox* modeBox() const { return mode_; }
    QLineEdit* modelBField() const { return modelB_; }
    QLineEdit* layersField() const { return layers_; }
    QLineEdit* layersBField() const { return layersB_; }
    QLineEdit* folderField() const { return folder_; }
    QSpinBox* batchBox() const { return batch_; }
    JobSetupColumn* setupColumn() const { return column_; }
    CkaHeatMap* heatMap() const { return heatMap_; }
    DriftPlot* driftPlot() const { return drift_; }
    CompareResultPtr result() const { return result_; }

    // Fills the form: mode "cka", "checkpoints" or "precision"; layers as specs.
    void setUp(const QString& mode, const QString& modelB, const QString& layers, const QString& folder);
    // The request the form describes; an empty error when it is complete.
    CompareRequest request(QString* error) const;
    // Writes the result: .pt/.json/.csv, or a plot as .png/.pdf ("heat map" or "drift" by `plot`).
    QString exportTo(const QString& path, const QString& plot = {}) const; // error or ""

public Q_SLOTS:
    void start();
    void cancel();
    void showPair(const QString& layerA, const QString& layerB);

Q_SIGNALS:
    void finished(const torchscope::CompareResultPtr& result);
    void failed(const QString& title, const QString& message);
    void pairShown(const torchscope::LayerPairResult& maps);

private:
    void updateMode();
    void showResult(const CompareResultPtr& result);
    void buildForm();
    void buildExportMenu();
    void connectJobs();
    void resetForModel();

    Document* document_;
    RunController* controller_;
    QPointer<JobHandle> mapsJob_; // a clicked cell's layer maps
    JobSetupColumn* column_;
    QHBoxLayout* modelBRow_ = nullptr;
    QComboBox* mode_;
    QLabel* modelA_;
    QLineEdit* modelB_;
    QPushButton* browseB_;
    QLineEdit* layers_;
    QLineEdit* layersB_;
    QList<QCheckBox*> precisions_;
    QComboBox* features_;
    QDoubleSpinBox* threshold_;
    QLineEdit* folder_;
    QSpinBox* batch_;
    QPushButton* start_;
    CkaHeatMap* heatMap_;
    DriftPlot* drift_;
    CompareResultPtr result_;
    CompareRequest lastRequest_; // the run started last
    CompareRequest shownRequest_; // the run whose result is on screen (a clicked cell's models)
    QString modelPath_; // model A's path: its layer specs belong to it
};

} // namespace torchscope
