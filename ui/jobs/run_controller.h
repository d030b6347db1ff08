#pragma once

#include "jobs/compare_types.h"
#include "jobs/job_runner.h"
#include "jobs/run_metatypes.h"
#include "jobs/visualize_types.h"

#include <QObject>
#include <QTimer>

#include <map>
#include <memory>

namespace torchscope {

class Document;
struct ModelKey;
struct WorkbenchState;

// The window's one way to its work: every tool asks here, each request becomes a job of the
// JobRunner (jobs/workbench_jobs.h: a thin call of a core operation), and results come back as the
// signals below, on the GUI thread. Every job runs on the model the Document names, on its device,
// from the runner's one ModelCache. Re-runs the model whenever the Document's request changes
// (debounced; the newest run supersedes the one in progress); results of an outdated request are
// dropped.
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
    // The runner, for tests that must stop a job at a known point (a blocking connection to its
    // progress signal, emitted on the job's thread, holds the job there until the slot returns).
    JobRunner* jobs() const { return jobs_; }
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

    // Batch-lane jobs a view follows by id (several channel pages may be open at once).
    JobId compare(const CompareRequest& request);
    JobId layerPairMaps(
        const CompareRequest& request, const QString& image, const QString& layerA, const QString& layerB);
    JobId visualize(const VisualizeRequest& request); // request.model/device are the Document's
    JobId attributionWorkbench(const AttributionWorkbenchRequest& request); // on the Document's model
    JobId attentionWorkbench(const AttentionWorkbenchRequest& request); // on the Document's model
    void cancelJob(JobId id);

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
    void recordFinished(const torchscope::RecordJobResultPtr& snapshot);
    void probeProgress(qint64 done, qint64 total, const QString& stage);
    void probesFinished(const torchscope::ProbeJobResultPtr& snapshot);
    void probeExported(const QString& path);
    void probeScores(const torchscope::ProbeScoresPtr& scores);
    void setupAdvised(const torchscope::SetupAdvice& advice);
    void setupSaved(const QString& path);
    void attributionFinished(const torchscope::GradCamResultPtr& result);
    void patchFinished(const torchscope::PatchResultPtr& result);
    // The followed jobs: progress ("stage" is the visualisation's objective so far), result, failure.
    void jobProgress(torchscope::JobId id, qint64 done, qint64 total, const QString& stage);
    void compareFinished(torchscope::JobId id, const torchscope::CompareResultPtr& result);
    void layerPairMapsReady(torchscope::JobId id, const torchscope::LayerPairResult& maps);
    void visualizeFinished(torchscope::JobId id, const torchscope::VisualizeJobResult& outcome);
    void attributionWorkbenchFinished(torchscope::JobId id, const torchscope::AttributionWorkbenchResultPtr& result);
    void attentionWorkbenchFinished(torchscope::JobId id, const torchscope::AttentionWorkbenchResultPtr& result);
    void jobFailed(torchscope::JobId id, const QString& message);

private:
    enum class Kind { Open, Run, Record, Probes, Followed, Other };
    template <typename Work>
    JobId submit(JobLane lane, Kind kind, WorkerTask task, const QString& title, Work work, const QString& group = {});
    ModelKey modelKey() const;
    void scheduleRun();
    void startRun();
    void setBusy(bool busy);
    void finishRun(const RunJobResultPtr& snapshot);

    Document* document_;
    JobRunner* jobs_;
    std::shared_ptr<WorkbenchState> state_;
    std::map<JobId, Kind> kinds_;
    QStringList operatorLibraries_;
    QTimer debounce_;
    int generation_ = 0;
    JobId runJob_ = 0, recordJob_ = 0, probesJob_ = 0;
    bool busy_ = false;
    bool openingModel_ = false;
};

} // namespace torchscope
