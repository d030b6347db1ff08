#include "jobs/run_controller.h"

#include "common/error.h"
#include "document/document.h"
#include "jobs/model_cache.h"
#include "jobs/workbench_jobs.h"

#include <torch/cuda.h>

#include <QPointer>

namespace torchscope {
namespace {

JobLane laneOf(AnalysisLane lane)
{
    return lane == AnalysisLane::Interactive ? JobLane::Interactive : JobLane::Batch;
}

// Core's progress as the runner's: a stage's name, else the unit's first figure (a visualisation's
// objective so far).
ProgressCallback progressOf(JobContext& job)
{
    return [&job](const Progress& p) {
        const QString stage = !p.stage.empty() ? QString::fromStdString(p.stage)
            : p.values.empty()                 ? QString()
                                               : QString::number(p.values.front(), 'g', 4);
        return job.progress(p.done, p.total, stage);
    };
}

} // namespace

RunController::RunController(Document* document, QObject* parent)
    : QObject(parent)
    , document_(document)
    , jobs_(new JobRunner(this))
    , state_(makeWorkbenchState())
{
    qRegisterMetaType<JobId>("torchscope::JobId");
    qRegisterMetaType<RunJobResultPtr>();
    qRegisterMetaType<SetupAdvice>();

    debounce_.setSingleShot(true);
    debounce_.setInterval(120);
    connect(&debounce_, &QTimer::timeout, this, &RunController::startRun);
    connect(document_, &Document::requestChanged, this, &RunController::scheduleRun);
    connect(jobs_, &JobRunner::progress, this, [this](JobId id, qint64 done, qint64 total, const QString&) {
        if (id != runJob_ || runJob_ == 0)
            return;
        document_->setRunProgress(int(done), int(total));
        Q_EMIT progress(int(done), int(total));
    });
    connect(jobs_, &JobRunner::finished, this, [this](JobId id) {
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

JobHandle* RunController::submit(const AnalysisInfo& info, AnalysisWork work, QObject* owner)
{
    // A newer request of an interactive analysis makes the older one's result useless.
    const QString group = info.lane == AnalysisLane::Interactive ? QString::fromStdString(info.name) : QString();
    return submitHandle(
        tr("%1 Failed").arg(QString::fromStdString(info.title)), laneOf(info.lane), group,
        [work = std::move(work), key = modelKey()](JobContext& context, ModelSource& models, const PartSink& parts) {
            AnalysisContext analysis{
                models, key, progressOf(context), [&context] { return context.isCancelled(); }, parts};
            return work(analysis);
        },
        owner);
}

JobHandle* RunController::startTask(
    const QString& title, JobLane lane, std::function<void(ModelSource& models)> work, QObject* owner)
{
    return submitHandle(
        title, lane, {},
        [work = std::move(work)](JobContext&, ModelSource& models, const PartSink&) -> std::shared_ptr<const void> {
            work(models);
            return nullptr;
        },
        owner);
}

JobHandle* RunController::submitHandle(const QString& title, JobLane lane, const QString& group,
    std::function<std::shared_ptr<const void>(JobContext&, ModelSource&, const PartSink&)> work, QObject* owner)
{
    auto* handle = new JobHandle(jobs_, title, owner);
    Job job;
    job.name = title;
    job.lane = lane;
    job.group = group;
    job.work = [work = std::move(work), lane, handle = QPointer<JobHandle>(handle)](
                   JobContext& context) -> std::function<void()> {
        LaneModels models(context.models(), lane);
        // Parts of the result reach the handle on the GUI thread, in the order they were made.
        const PartSink parts = [&context, handle](std::shared_ptr<const void> part) {
            context.post([handle, part = std::move(part)] {
                if (handle)
                    handle->deliverPart(part);
            });
        };
        std::shared_ptr<const void> result = work(context, models, parts);
        return [handle, result = std::move(result)] {
            if (handle)
                handle->succeed(result);
        };
    };
    job.failed = [this, title, handle = QPointer<JobHandle>(handle)](const QString& message) {
        if (handle)
            handle->fail(message);
        Q_EMIT failed(title, message);
    };
    handle->attach(jobs_->submit(std::move(job)));
    return handle;
}

JobId RunController::submitOwn(
    const QString& title, std::function<std::function<void()>(JobContext&)> work, const QString& group, bool opening)
{
    Job job;
    job.name = title;
    job.lane = JobLane::Interactive;
    job.group = group;
    job.work = std::move(work);
    job.failed = [this, title, opening](const QString& message) {
        if (opening) {
            openingModel_ = false;
            setBusy(false);
        }
        Q_EMIT failed(title, message);
    };
    return jobs_->submit(std::move(job));
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
    submitOwn(
        tr("Error Opening Model"),
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
        },
        {}, true);
}

void RunController::cancel()
{
    jobs_->cancel(runJob_);
}

void RunController::exportTensors(const QString& path)
{
    submitOwn(tr("Error Exporting"), [this, state = state_, path](JobContext&) -> std::function<void()> {
        try {
            const QStringList leftOut = jobs::exportTensors(*state, path);
            return [this, path, leftOut] { Q_EMIT exported(path, leftOut); };
        } catch (const std::exception& e) {
            throw Error(tr("Could not write '%1':\n%2").arg(path, QString::fromStdString(e.what())).toStdString());
        }
    });
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
        Q_EMIT failed(tr("Error Running Model"), QString::fromStdString(e.what()));
        return;
    }
    setBusy(true);
    Q_EMIT progress(0, static_cast<int>(request.images.size()));
    runJob_ = submitOwn(
        tr("Error Running Model"),
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
            Q_EMIT failed(tr("Error Running Model"), message);
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
