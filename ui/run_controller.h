#pragma once

#include "run_metatypes.h"

#include <QObject>
#include <QThread>
#include <QTimer>

#include <memory>

namespace torchscope {

class Document;
class RunWorker;

// Owns the worker thread and is the only way to it: every tool calls it here (queued to the
// worker) and hears back through its signals, on the GUI thread. Re-runs the model whenever the
// Document's request changes (debounced; a newer request cancels the run in progress); results
// that belong to an outdated request are dropped.
class RunController : public QObject {
    Q_OBJECT
public:
    explicit RunController(Document* document, QObject* parent = nullptr);
    ~RunController() override;

    static QStringList availableDevices(); // "cpu", and "cuda" when LibTorch sees a GPU

    void openModel(const QString& path, const QStringList& operatorLibraries = {});
    bool isOpeningModel() const { return openingModel_; }
    bool isBusy() const { return busy_; }
    void cancel(); // the image run in progress
    // The worker on its thread, for tests that must stop it at a known point (a blocking connection
    // to its progress signal holds the run there until the slot returns).
    RunWorker* worker() const { return worker_.get(); }
    void exportTensors(const QString& path);

    void startRecording(const RecordRequest& request);
    void cancelRecording();
    void exportRecording(const QString& path);

    void trainProbes(const ProbeRequest& request);
    void cancelProbes();
    void exportProbe(const QString& layer, const QString& path, bool stateDict);
    void applyProbeFile(const QString& path, const QStringList& images, const ModelSetup& setup);

    void adviseSetup(const ModelSetup& current);
    void saveSetupIntoModel(const QString& path, const ModelSetup& setup);

    void attribute(const GradCamRequest& request);
    void patch(const PatchRequest& request);

Q_SIGNALS:
    void busyChanged(bool busy);
    void progress(int done, int total);
    void modelOpened(const QString& path);
    // Any task's failure: the window reports it, the view that started the task stops waiting.
    void failed(torchscope::WorkerTask task, const QString& title, const QString& message);
    // The model failed on every image in a way that points at the input setup (size, channels).
    void setupProblemFound(const QString& message);
    void runCompleted(double seconds, int images, int failures, bool cancelled);
    void exported(const QString& path, const QStringList& leftOut);
    void recordProgress(qint64 done, qint64 total);
    void recordFinished(const torchscope::RecordSnapshotPtr& snapshot);
    void probeProgress(qint64 done, qint64 total, const QString& stage);
    void probesFinished(const torchscope::ProbeSnapshotPtr& snapshot);
    void probeExported(const QString& path);
    void probeScores(const torchscope::ProbeScoresPtr& scores);
    void setupAdvised(const torchscope::SetupAdvice& advice);
    void setupSaved(const QString& path);
    void attributionFinished(const torchscope::GradCamResultPtr& snapshot);
    void patchFinished(const torchscope::PatchResultPtr& snapshot);

private:
    void scheduleRun();
    void startRun();
    void setBusy(bool busy);
    void finishRun(const RunSnapshotPtr& snapshot);
    template <typename Call> void onWorker(Call call); // runs call(worker) on the worker thread

    Document* document_;
    QThread thread_;
    std::unique_ptr<RunWorker> worker_;
    QTimer debounce_;
    int generation_ = 0;
    bool busy_ = false;
    bool openingModel_ = false;
};

} // namespace torchscope
