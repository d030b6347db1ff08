#pragma once

#include "jobs/job_runner.h"
#include "jobs/run_metatypes.h"

#include <QWidget>

#include <vector>

class QComboBox;
class QCustomPlot;
class QGridLayout;
class QHBoxLayout;
class QLabel;
class QLineEdit;
class QPushButton;
class QScrollArea;
class QSpinBox;

namespace torchscope {

class ColorBar;
class Document;
class JobSetupColumn;
class RunController;

// Concept Relevance Propagation for the window's images (core's computeConceptRelevance): for the
// image shown and a layer, the channels ranked by their share of the relevance as a bar plot;
// clicking a bar shows that channel's conditional map beside the image's whole LRP map, its
// reference images from a folder (RelMax or ActMax, the cell where it peaks outlined), and opens its
// channel page on request. One job on the batch lane with progress and cancel; each image appears
// as soon as it is explained.
class RelevancePanel : public QWidget {
    Q_OBJECT
public:
    RelevancePanel(Document* document, RunController* controller, QWidget* parent = nullptr);

    QPushButton* startButton() const { return start_; }
    QComboBox* layerBox() const { return layer_; }
    QLineEdit* channelsField() const { return channels_; }
    QLineEdit* referenceFolder() const { return folder_; }
    QComboBox* imageBox() const { return image_; }
    QCustomPlot* bars() const { return bars_; }
    QLabel* channelMap() const { return channelMap_; }
    QLabel* caption() const { return caption_; }
    QList<QLabel*> referenceLabels() const { return references_; }
    QPushButton* channelPageButton() const { return channelPage_; }
    JobSetupColumn* column() const { return column_; }
    ConceptRelevanceResultPtr result() const { return result_; }
    int64_t pickedChannel() const { return channel_; }

    // Shows `channel` of the image shown (one of its conditioned channels).
    void pick(int64_t channel);
    // Writes the result (.json, .npz, .pt, .safetensors) or the bar plot (.png, .pdf); returns an error
    // message, or "" when written.
    QString exportTo(const QString& path, const QString& plot = {}) const;

Q_SIGNALS:
    void failed(const QString& title, const QString& message);
    void finished(const torchscope::ConceptRelevanceResultPtr& result);
    void channelPageRequested(const QString& layer, int channel);

public Q_SLOTS:
    void start();

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void buildForm();
    void buildExportMenu();
    QWidget* buildResults();
    void connectJobs();
    void fillLayers();
    void resetForModel();
    void addImage(const CrpImageResult& part);
    void showResult(const ConceptRelevanceResultPtr& result);
    void redraw();
    void drawBars(const CrpImage& image);
    void drawMaps(const CrpImage& image);
    void drawReferences();
    void placeMaps(bool beside);

    Document* document_;
    RunController* controller_;
    JobSetupColumn* column_;
    QComboBox* layer_;
    QLineEdit* channels_;
    QSpinBox* target_;
    QComboBox* composite_;
    QComboBox* attentionRule_;
    QLineEdit* rules_;
    QLineEdit* folder_;
    QSpinBox* top_;
    QComboBox* referenceBy_;
    QPushButton* start_;
    QComboBox* image_;
    QCustomPlot* bars_;
    QLabel* wholeMap_;
    ColorBar* wholeBar_;
    QLabel* channelMap_;
    ColorBar* channelBar_;
    QLabel* caption_;
    QLabel* referenceTitle_;
    QHBoxLayout* referenceRow_;
    QList<QLabel*> references_;
    QPushButton* channelPage_;
    ConceptRelevanceResultPtr result_;
    std::shared_ptr<ConceptRelevanceResult> soFar_;
    ConceptRelevanceRequest shown_;
    QScrollArea* lowerScroll_ = nullptr;
    QGridLayout* maps_ = nullptr;
    QLabel* channelTitle_ = nullptr;
    QLabel* wholeTitle_ = nullptr;
    bool mapsBeside_ = true;
    bool layerPicked_ = false;
    int mapSize_ = 200; // each map's side, from the width there is
    std::vector<int64_t> barChannels_; // the channel of each bar, left to right
    int64_t channel_ = -1;
};

} // namespace torchscope
