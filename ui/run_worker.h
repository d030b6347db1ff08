#pragma once

#include "run_metatypes.h"

#include <QObject>
#include <QString>

#include <atomic>
#include <memory>

namespace torchscope {

// Owns the model and its engine on their own thread (see RunController, which gives the typed
// calls). Requests come in as queued slot calls, progress and results go out as signals, every
// failure as failed(). Torch lives only in its .cpp files.
class RunWorker : public QObject {
    Q_OBJECT
public:
    RunWorker();
    ~RunWorker() override;

    // Thread-safe: stops the run in progress after the current image; what is done is kept.
    void cancel() { cancelled_ = true; }
    // Thread-safe: stops a folder recording after the current batch; what is recorded is kept.
    void cancelRecording() { recordingCancelled_ = true; }
    // Thread-safe: stops probe training (activations or the sweep); finished layers are kept.
    void cancelProbes() { probesCancelled_ = true; }

    static QStringList availableDevices(); // "cpu", and "cuda" when LibTorch sees a GPU

public Q_SLOTS:
    void openModel(const QString& path, const QString& device, const QStringList& operatorLibraries);
    void run(const torchscope::RunRequest& request);
    void exportTensors(const QString& path);
    void record(const torchscope::RecordRequest& request);
    void exportRecording(const QString& path);
    // What the model says about its input (the setup dialog's suggestions): setupAdvised.
    void adviseSetup(const torchscope::ModelSetup& current);
    // A copy of the open model's file with the setup stored as its torchscope.json.
    void saveSetupIntoModel(const QString& path, const torchscope::ModelSetup& setup);
    // Probes, Grad-CAM and patching: run_worker_analyses.cpp.
    void trainProbes(const torchscope::ProbeRequest& request);
    void exportProbe(const QString& layer, const QString& path, bool stateDict);
    void applyProbeFile(const QString& path, const QStringList& images, const torchscope::ModelSetup& setup);
    void attribute(const torchscope::GradCamRequest& request);
    void patch(const torchscope::PatchRequest& request);

Q_SIGNALS:
    void modelOpened(const torchscope::ModelSummary& summary);
    void progress(int generation, int done, int total);
    // Also a run the model failed on every image of (RunSnapshot::error); see RunController.
    void runFinished(const torchscope::RunSnapshotPtr& snapshot);
    void setupAdvised(const torchscope::SetupAdvice& advice);
    void setupSaved(const QString& path);
    void exported(const QString& path, const QStringList& leftOut);
    void recordProgress(qint64 done, qint64 total);
    void recordFinished(const torchscope::RecordSnapshotPtr& snapshot);
    void probeProgress(qint64 done, qint64 total, const QString& stage);
    void probesFinished(const torchscope::ProbeSnapshotPtr& snapshot);
    void probeExported(const QString& path);
    void probeScores(const torchscope::ProbeScoresPtr& scores);
    void attributionFinished(const torchscope::GradCamResultPtr& snapshot);
    void patchFinished(const torchscope::PatchResultPtr& snapshot);
    // Every task's failure, with the dialog title and the message for the researcher.
    void failed(torchscope::WorkerTask task, const QString& title, const QString& message);

private:
    struct State;
    std::unique_ptr<State> state_;
    std::atomic_bool cancelled_{false};
    std::atomic_bool recordingCancelled_{false};
    std::atomic_bool probesCancelled_{false};
};

} // namespace torchscope
