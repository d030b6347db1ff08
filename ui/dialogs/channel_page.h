#pragma once

// What does this channel look for? A page for one channel of one layer: an image optimised to
// excite it (a batch job of the RunController, with progress and cancel; cached per model, layer,
// channel and settings), the top images of the last recording with the channel's map over each,
// the channel's statistics, and export of the page as PNG.

#include "jobs/job_handle.h"
#include "jobs/run_types.h"

#include <QDialog>
#include <QPointer>

class QComboBox;
class QGridLayout;
class QLabel;
class QProgressBar;
class QPushButton;
class QSpinBox;

namespace torchscope {

class ColorBar;
class Document;
class RunController;
struct VisualizeJobResult;
struct VisualizeRequest;

class ChannelPage : public QDialog {
    Q_OBJECT
public:
    // recording: the Recorders panel's last run (may be null: no top images, no statistics).
    ChannelPage(Document* document, RunController* controller, RecordResultPtr recording, const QString& layer,
        int channel, QWidget* parent = nullptr);
    ~ChannelPage() override;

    void optimise(); // from the cache when these settings ran before
    void exportTo(const QString& path); // the page as PNG, atomically; emits failed on error
    bool isRunning() const;
    // The channel's concept labels from a dissection (the Concepts tab's), shown under the title; ""
    // hides them.
    void setConcepts(const QString& labels);
    QString conceptsText() const;
    QString valueText() const;

Q_SIGNALS:
    void optimised(); // the image is on the page (computed or from the cache)
    void failed(const QString& title, const QString& message);

private:
    void showOutcome(const VisualizeJobResult& outcome);
    void showMaps(const VisualizeJobResult& outcome);
    void fillRecording();
    std::vector<std::string> topImagePaths() const;
    void startJob(const VisualizeRequest& request);

    Document* document_;
    RecordResultPtr recording_;
    QString layer_;
    int channel_;
    RunController* controller_;
    QPointer<JobHandle> job_; // the visualisation in progress
    QSpinBox* steps_;
    QComboBox* parameterization_;
    QSpinBox* seed_;
    QSpinBox* size_;
    QPushButton* run_;
    QPushButton* cancel_;
    QProgressBar* progress_;
    QLabel* image_;
    QLabel* value_;
    QLabel* notes_;
    QLabel* concepts_;
    QLabel* statistics_;
    QGridLayout* topGrid_;
    ColorBar* mapsScale_; // the top images' maps' one scale
    std::vector<QLabel*> topPictures_;
    bool running_ = false;
    bool mapsShown_ = false;
};

} // namespace torchscope
