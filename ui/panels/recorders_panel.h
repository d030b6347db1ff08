#pragma once

#include "jobs/run_metatypes.h"

#include <QWidget>

class QComboBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QPushButton;
class QSpinBox;

namespace torchscope {

class Document;
class JobSetupColumn;
class RunController;
class StatisticsPlots;

// Sets up and starts a recording over an image folder (core/record on the worker thread), shows
// its progress, and browses what it recorded per layer: the statistics plots and the images
// that excite a channel most (top-k by mean activation).
class RecordersPanel : public QWidget {
    Q_OBJECT
public:
    RecordersPanel(Document* document, RunController* controller, QWidget* parent = nullptr);

    QLineEdit* folderField() const { return folder_; }
    QLineEdit* grabsField() const { return grabs_; }
    QComboBox* reductionBox() const { return reduction_; }
    QLineEdit* conditionField() const { return condition_; }
    QComboBox* layerBox() const { return layer_; }
    QSpinBox* channelBox() const { return channel_; }
    QListWidget* topImages() const { return topImages_; }
    StatisticsPlots* plots() const { return plots_; }
    RecordResultPtr snapshot() const { return snapshot_; }

    // Writes the recording (FILE.pt/.npz/.safetensors with its CSV and JSON, or a folder) on the
    // batch lane; exported() when it is written.
    void exportTo(const QString& path);

Q_SIGNALS:
    void channelPageRequested(const QString& layer, int channel);
    void finished(const torchscope::RecordResultPtr& result);
    void exported(const QString& path, const QStringList& leftOut);

public Q_SLOTS:
    void start();
    void exportRecording();

private:
    void buildSetupColumn();
    QWidget* buildResultsColumn();
    void connectJobs();
    void resetForModel();
    void showRecording(const RecordResultPtr& snapshot);
    void showLayer();
    void showTopImages();
    void showEdits();
    void requestChannelPage(int channel); // for a layer's output; inputs and gradients have no page

    Document* document_;
    RunController* controller_;
    JobSetupColumn* column_;
    QLineEdit* folder_;
    QLineEdit* grabs_;
    QComboBox* reduction_;
    QLineEdit* condition_;
    QSpinBox* batch_;
    QPushButton* start_;
    QComboBox* layer_;
    QSpinBox* channel_;
    StatisticsPlots* plots_;
    QListWidget* topImages_;
    QLabel* edits_;
    RecordResultPtr snapshot_;
};

} // namespace torchscope
