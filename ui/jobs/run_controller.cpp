#include "jobs/run_controller.h"

#include "common/error.h"
#include "document/document.h"
#include "jobs/model_cache.h"
#include "jobs/workbench_jobs.h"

#include <torch/cuda.h>

namespace torchscope {

RunController::RunController(Document* document, QObject* parent)
    : QObject(parent)
    , document_(document)
    , jobs_(new JobRunner(this))
    , state_(makeWorkbenchState())
{
    qRegisterMetaType<WorkerTask>();
    qRegisterMetaType<JobId>("torchscope::JobId");
    qRegisterMetaType<RunJobResultPtr>();
    qRegisterMetaType<RecordJobResultPtr>();
    qRegisterMetaType<ProbeJobResultPtr>();
    qRegisterMetaType<ProbeScoresPtr>();
    qRegisterMetaType<GradCamResultPtr>();
    qRegisterMetaType<PatchResultPtr>();
    qRegisterMetaType<AttributionWorkbenchResultPtr>();
    qRegisterMetaType<AttentionWorkbenchResultPtr>();
    qRegisterMetaType<SetupAdvice>();
    qRegisterMetaType<CompareResultPtr>();
    qRegisterMetaType<LayerPairResult>();
    qRegisterMetaType<VisualizeJobResult>();

    debounce_.setSingleShot(true);
    debounce_.setInterval(120);
    connect(&debounce_, &QTimer::timeout, this, &RunController::startRun);
    connect(document_, &Document::requestChanged, this, &RunController::scheduleRun);
    connect(jobs_, &JobRunner::progress, this, [this](JobId id, qint64 done, qint64 total, const QString& stage) {
        const auto it = kinds_.find(id);
        if (it == kinds_.end())
            return;
        switch (it->second) {
        case Kind::Run:
            if (id == runJob_) {
                document_->setRunProgress(int(done), int(total));
                Q_EMIT progress(int(done), int(total));
            }
            break;
        case Kind::Record:
            Q_EMIT recordProgress(done, total);
            break;
        case Kind::Probes:
            Q_EMIT probeProgress(done, total, stage);
            break;
        case Kind::Followed:
            Q_EMIT jobProgress(id, done, total, stage);
            break;
        default:
            break;
        }
    });
    connect(jobs_, &JobRunner::finished, this, [this](JobId id) {
        kinds_.erase(id);
        // A run cancelled before it started hands nothing over: the window stops waiting all the same.
        if (id == runJob_ && busy_ && !openingModel_)
            setBusy(false);
    });
}

RunController::~RunController()
{
    delete jobs_; // cancels every job and waits for the lanes, while this is still whole
}

QStringList RunController::availableDevices()
{
    QStringList devices{"cpu"};
    if (torch::cuda::is_available())
        devices.prepend("cuda");
    return devices;
}

ModelKey RunController::modelKey() const
{
    ModelKey key;
    key.path = document_->modelPath().toStdString();
    key.device = document_->device().isEmpty() ? "cpu" : document_->device().toStdString();
    for (const auto& library : operatorLibraries_)
        key.operatorLibraries.push_back(library.toStdString());
    return key;
}

template <typename Work>
JobId RunController::submit(
    JobLane lane, Kind kind, WorkerTask task, const QString& title, Work work, const QString& group)
{
    Job job;
    job.name = title;
    job.lane = lane;
    job.group = group;
    job.work = std::move(work);
    auto id = std::make_shared<JobId>(0);
    job.failed = [this, kind, task, title, id](const QString& message) {
        if (kind == Kind::Followed) {
            Q_EMIT jobFailed(*id, message);
            return;
        }
        if (kind == Kind::Open) {
            openingModel_ = false;
            setBusy(false);
        }
        Q_EMIT failed(task, title, message);
    };
    *id = jobs_->submit(std::move(job));
    kinds_[*id] = kind;
    return *id;
}

void RunController::openModel(const QString& path, const QStringList& operatorLibraries)
{
    ++generation_; // results of the old model are of no use
    jobs_->cancel(runJob_);
    operatorLibraries_ = operatorLibraries;
    openingModel_ = true;
    setBusy(true);
    ModelKey key = modelKey();
    key.path = path.toStdString();
    submit(JobLane::Interactive, Kind::Open, WorkerTask::OpenModel, tr("Error Opening Model"),
        [this, state = state_, key, path](JobContext& job) -> std::function<void()> {
            try {
                auto summary = jobs::openModel(job, *state, key);
                return [this, summary] {
                    openingModel_ = false;
                    document_->setModel(summary);
                    Q_EMIT modelOpened(QString::fromStdString(summary.path));
                };
            } catch (const std::exception& e) {
                throw Error(tr("Could not open '%1':\n%2").arg(path, QString::fromStdString(e.what())).toStdString());
            }
        });
}

void RunController::cancel()
{
    jobs_->cancel(runJob_);
}

void RunController::exportTensors(const QString& path)
{
    submit(JobLane::Interactive, Kind::Other, WorkerTask::Export, tr("Error Exporting"),
        [this, state = state_, path](JobContext&) -> std::function<void()> {
            try {
                const QStringList leftOut = jobs::exportTensors(*state, path);
                return [this, path, leftOut] { Q_EMIT exported(path, leftOut); };
            } catch (const std::exception& e) {
                throw Error(tr("Could not write '%1':\n%2").arg(path, QString::fromStdString(e.what())).toStdString());
            }
        });
}

void RunController::startRecording(const RecordRequest& request)
{
    recordJob_ = submit(JobLane::Batch, Kind::Record, WorkerTask::Record, tr("Error Recording"),
        [this, state = state_, key = modelKey(), request](JobContext& job) -> std::function<void()> {
            const auto snapshot = jobs::record(job, *state, key, request);
            return [this, snapshot] { Q_EMIT recordFinished(snapshot); };
        });
}

void RunController::cancelRecording()
{
    jobs_->cancel(recordJob_);
}

void RunController::exportRecording(const QString& path)
{
    submit(JobLane::Batch, Kind::Other, WorkerTask::Export, tr("Error Exporting"),
        [this, state = state_, path](JobContext&) -> std::function<void()> {
            try {
                const QStringList leftOut = jobs::exportRecording(*state, path);
                return [this, path, leftOut] { Q_EMIT exported(path, leftOut); };
            } catch (const std::exception& e) {
                throw Error(tr("Could not write '%1':\n%2").arg(path, QString::fromStdString(e.what())).toStdString());
            }
        });
}

void RunController::trainProbes(const ProbeRequest& request)
{
    probesJob_ = submit(JobLane::Batch, Kind::Probes, WorkerTask::Probes, tr("Error Training Probe"),
        [this, state = state_, key = modelKey(), request](JobContext& job) -> std::function<void()> {
            const auto snapshot = jobs::trainProbes(job, *state, key, request);
            return [this, snapshot] { Q_EMIT probesFinished(snapshot); };
        });
}

void RunController::cancelProbes()
{
    jobs_->cancel(probesJob_);
}

void RunController::exportProbe(const QString& layer, const QString& path, bool stateDict)
{
    submit(JobLane::Batch, Kind::Other, WorkerTask::Probes, tr("Error Exporting Probe"),
        [this, state = state_, layer, path, stateDict](JobContext&) -> std::function<void()> {
            jobs::exportProbe(*state, layer, path, stateDict);
            return [this, path] { Q_EMIT probeExported(path); };
        });
}

void RunController::applyProbeFile(const QString& path, const QStringList& images, const ModelSetup& setup)
{
    submit(JobLane::Interactive, Kind::Other, WorkerTask::Probes, tr("Error Importing Probe"),
        [this, key = modelKey(), path, images, setup](JobContext& job) -> std::function<void()> {
            const auto scores = jobs::applyProbeFile(job, key, path, images, setup);
            return [this, scores] { Q_EMIT probeScores(scores); };
        });
}

void RunController::adviseSetup(const ModelSetup& current)
{
    if (!document_->hasModel())
        return;
    submit(JobLane::Interactive, Kind::Other, WorkerTask::Setup, tr("Error Examining Model"),
        [this, key = modelKey(), current](JobContext& job) -> std::function<void()> {
            const SetupAdvice advice = jobs::adviseSetup(job, key, current);
            return [this, advice] { Q_EMIT setupAdvised(advice); };
        });
}

void RunController::saveSetupIntoModel(const QString& path, const ModelSetup& setup)
{
    submit(JobLane::Interactive, Kind::Other, WorkerTask::Setup, tr("Error Saving Setup"),
        [this, key = modelKey(), path, setup](JobContext&) -> std::function<void()> {
            try {
                jobs::saveSetupIntoModel(key, path, setup);
                return [this, path] { Q_EMIT setupSaved(path); };
            } catch (const std::exception& e) {
                throw Error(tr("Could not write '%1':\n%2").arg(path, QString::fromStdString(e.what())).toStdString());
            }
        });
}

void RunController::attribute(const GradCamRequest& request)
{
    submit(
        JobLane::Interactive, Kind::Other, WorkerTask::Attribution, tr("Error Computing Grad-CAM"),
        [this, key = modelKey(), request](JobContext& job) -> std::function<void()> {
            const auto result = jobs::gradCam(job, key, request);
            return [this, result] { Q_EMIT attributionFinished(result); };
        },
        "grad-cam");
}

void RunController::patch(const PatchRequest& request)
{
    const QString title = request.mode == PatchMode::Ablate ? tr("Error Ablating")
        : request.mode == PatchMode::Difference             ? tr("Error Comparing Inputs")
                                                            : tr("Error Patching");
    submit(JobLane::Interactive, Kind::Other, WorkerTask::Patch, title,
        [this, key = modelKey(), request](JobContext& job) -> std::function<void()> {
            const auto result = jobs::patch(job, key, request);
            return [this, result] { Q_EMIT patchFinished(result); };
        });
}

JobId RunController::compare(const CompareRequest& request)
{
    auto id = std::make_shared<JobId>(0);
    *id = submit(JobLane::Batch, Kind::Followed, WorkerTask::Run, tr("Comparison Failed"),
        [this, request, id](JobContext& job) -> std::function<void()> {
            const auto result = jobs::compare(job, request);
            return [this, result, id] { Q_EMIT compareFinished(*id, result); };
        });
    return *id;
}

JobId RunController::attributionWorkbench(const AttributionWorkbenchRequest& request)
{
    auto id = std::make_shared<JobId>(0);
    *id = submit(JobLane::Batch, Kind::Followed, WorkerTask::Run, tr("Attribution Failed"),
        [this, request, id, key = modelKey()](JobContext& job) -> std::function<void()> {
            const auto result = jobs::attributionWorkbench(job, key, request);
            return [this, result, id] { Q_EMIT attributionWorkbenchFinished(*id, result); };
        });
    return *id;
}

JobId RunController::attentionWorkbench(const AttentionWorkbenchRequest& request)
{
    auto id = std::make_shared<JobId>(0);
    *id = submit(JobLane::Batch, Kind::Followed, WorkerTask::Run, tr("Attention Maps Failed"),
        [this, request, id, key = modelKey()](JobContext& job) -> std::function<void()> {
            const auto result = jobs::attentionWorkbench(job, key, request);
            return [this, result, id] { Q_EMIT attentionWorkbenchFinished(*id, result); };
        });
    return *id;
}

JobId RunController::layerPairMaps(
    const CompareRequest& request, const QString& image, const QString& layerA, const QString& layerB)
{
    auto id = std::make_shared<JobId>(0);
    *id = submit(JobLane::Batch, Kind::Followed, WorkerTask::Run, tr("Layer Maps Failed"),
        [this, request, id, image = image.toStdString(), a = layerA.toStdString(), b = layerB.toStdString()](
            JobContext& job) -> std::function<void()> {
            const LayerPairResult maps = jobs::layerPairMaps(job, request, image, a, b);
            return [this, maps, id] { Q_EMIT layerPairMapsReady(*id, maps); };
        });
    return *id;
}

JobId RunController::visualize(const VisualizeRequest& request)
{
    auto id = std::make_shared<JobId>(0);
    *id = submit(JobLane::Batch, Kind::Followed, WorkerTask::Run, tr("Feature visualisation failed"),
        [this, request, id](JobContext& job) -> std::function<void()> {
            const VisualizeJobResult outcome = jobs::visualize(job, request);
            return [this, outcome, id] { Q_EMIT visualizeFinished(*id, outcome); };
        });
    return *id;
}

void RunController::cancelJob(JobId id)
{
    jobs_->cancel(id);
}

void RunController::scheduleRun()
{
    if (busy_)
        jobs_->cancel(runJob_); // what it computes now is already outdated
    debounce_.start();
}

void RunController::startRun()
{
    if (openingModel_) { // modelOpened() re-requests a run
        return;
    }
    if (!document_->hasModel() || document_->images().isEmpty()) {
        ++generation_;
        setBusy(false);
        return;
    }
    RunRequest request;
    try {
        request = document_->makeRunRequest(++generation_);
    } catch (const std::exception& e) {
        Q_EMIT failed(WorkerTask::Run, tr("Error Running Model"), QString::fromStdString(e.what()));
        return;
    }
    setBusy(true);
    Q_EMIT progress(0, static_cast<int>(request.images.size()));
    runJob_ = submit(
        JobLane::Interactive, Kind::Run, WorkerTask::Run, tr("Error Running Model"),
        [this, state = state_, request](JobContext& job) -> std::function<void()> {
            // Each image's result is shown as soon as it has run, unless a newer run replaced this one.
            const int total = static_cast<int>(request.images.size());
            const auto showImage = [this, &job, generation = request.generation, total](const ImageResult& image) {
                job.post([this, generation, image, total] {
                    if (generation == generation_)
                        document_->addRunningResult(generation, image, total);
                });
            };
            const auto snapshot = jobs::runImages(job, *state, request, showImage);
            return [this, snapshot] { finishRun(snapshot); };
        },
        "run");
}

void RunController::finishRun(const RunJobResultPtr& snapshot)
{
    if (snapshot->generation != generation_)
        return; // a newer request is on its way
    setBusy(false);
    if (!snapshot->error.empty()) {
        const QString message = QString::fromStdString(snapshot->error);
        if (!snapshot->setupAdvice.empty())
            Q_EMIT setupProblemFound(message);
        else
            Q_EMIT failed(WorkerTask::Run, tr("Error Running Model"), message);
        return;
    }
    document_->setSnapshot(snapshot);
    Q_EMIT runCompleted(snapshot->seconds, static_cast<int>(snapshot->images.size()),
        static_cast<int>(snapshot->failures.size()), snapshot->cancelled);
}

void RunController::setBusy(bool busy)
{
    if (busy == busy_)
        return;
    busy_ = busy;
    if (!busy)
        document_->setRunProgress(0, 0);
    Q_EMIT busyChanged(busy);
}

} // namespace torchscope
