#pragma once

#include "run_metatypes.h"

#include <QObject>
#include <QThread>
#include <QTimer>

#include <memory>

namespace torchscope {

class Document;
class RunWorker;

// Owns the worker thread. Opens models there, and re-runs the model whenever the Document's
// request changes (debounced; a newer request cancels the run in progress). Results that belong
// to an outdated request are dropped.
class RunController : public QObject {
    Q_OBJECT
public:
    explicit RunController(Document* document, QObject* parent = nullptr);
    ~RunController() override;

    void openModel(const QString& path, const QStringList& operatorLibraries = {});
    void exportTensors(const QString& path);
    void cancel();
    void startRecording(const RecordRequest& request);
    void cancelRecording();
    void exportRecording(const QString& path);
    bool isBusy() const { return busy_; }
    // The probe, Grad-CAM and patching tools call it with queued invocations and listen to its
    // signals (they arrive on the GUI thread).
    RunWorker* worker() const { return worker_.get(); }
    bool isOpeningModel() const { return openingModel_; }

Q_SIGNALS:
    void busyChanged(bool busy);
    void progress(int done, int total);
    void modelOpened(const QString& path);
    void failed(const QString& title, const QString& message);
    // The model failed on every image in a way that points at the input setup (size, channels).
    void setupProblemFound(const QString& message);
    void runCompleted(double seconds, int images, int failures, bool cancelled);
    void exported(const QString& path, const QStringList& leftOut);
    void recordProgress(qint64 done, qint64 total);
    void recordFinished(const torchscope::RecordSnapshotPtr& snapshot);

private:
    void scheduleRun();
    void startRun();
    void setBusy(bool busy);

    Document* document_;
    QThread thread_;
    std::unique_ptr<RunWorker> worker_;
    QTimer debounce_;
    int generation_ = 0;
    bool busy_ = false;
    bool openingModel_ = false;
};

} // namespace torchscope
