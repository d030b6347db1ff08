#include "run_controller.h"

#include "document.h"
#include "run_worker.h"

namespace torchscope {

RunController::RunController(Document* document, QObject* parent)
    : QObject(parent)
    , document_(document)
    , worker_(std::make_unique<RunWorker>())
{
    qRegisterMetaType<ModelSummary>();
    qRegisterMetaType<WorkerTask>();
    qRegisterMetaType<RunRequest>();
    qRegisterMetaType<RunSnapshotPtr>();
    qRegisterMetaType<RecordRequest>();
    qRegisterMetaType<RecordSnapshotPtr>();
    qRegisterMetaType<ProbeRequest>();
    qRegisterMetaType<ProbeSnapshotPtr>();
    qRegisterMetaType<ProbeScoresPtr>();
    qRegisterMetaType<GradCamRequest>();
    qRegisterMetaType<GradCamResultPtr>();
    qRegisterMetaType<PatchRequest>();
    qRegisterMetaType<PatchResultPtr>();
    qRegisterMetaType<ModelSetup>();
    qRegisterMetaType<SetupAdvice>();

    worker_->moveToThread(&thread_);
    thread_.setObjectName("torchscope-run");
    thread_.start();

    debounce_.setSingleShot(true);
    debounce_.setInterval(120);
    connect(&debounce_, &QTimer::timeout, this, &RunController::startRun);
    connect(document_, &Document::requestChanged, this, &RunController::scheduleRun);

    RunWorker* worker = worker_.get();
    connect(worker, &RunWorker::modelOpened, this, [this](const ModelSummary& summary) {
        openingModel_ = false;
        document_->setModel(summary);
        Q_EMIT modelOpened(QString::fromStdString(summary.path));
    });
    connect(worker, &RunWorker::progress, this, [this](int generation, int done, int total) {
        if (generation == generation_)
            Q_EMIT progress(done, total);
    });
    connect(worker, &RunWorker::runFinished, this, &RunController::finishRun);
    connect(worker, &RunWorker::failed, this, [this](WorkerTask task, const QString& title, const QString& message) {
        if (task == WorkerTask::OpenModel) {
            openingModel_ = false;
            setBusy(false);
        }
        Q_EMIT failed(task, title, message);
    });
    connect(worker, &RunWorker::exported, this, &RunController::exported);
    connect(worker, &RunWorker::recordProgress, this, &RunController::recordProgress);
    connect(worker, &RunWorker::recordFinished, this, &RunController::recordFinished);
    connect(worker, &RunWorker::probeProgress, this, &RunController::probeProgress);
    connect(worker, &RunWorker::probesFinished, this, &RunController::probesFinished);
    connect(worker, &RunWorker::probeExported, this, &RunController::probeExported);
    connect(worker, &RunWorker::probeScores, this, &RunController::probeScores);
    connect(worker, &RunWorker::setupAdvised, this, &RunController::setupAdvised);
    connect(worker, &RunWorker::setupSaved, this, &RunController::setupSaved);
    connect(worker, &RunWorker::attributionFinished, this, &RunController::attributionFinished);
    connect(worker, &RunWorker::patchFinished, this, &RunController::patchFinished);
}

RunController::~RunController()
{
    worker_->cancel();
    thread_.requestInterruption();
    thread_.quit();
    thread_.wait();
}

QStringList RunController::availableDevices()
{
    return RunWorker::availableDevices();
}

template <typename Call> void RunController::onWorker(Call call)
{
    RunWorker* worker = worker_.get();
    QMetaObject::invokeMethod(
        worker, [worker, call] { call(*worker); }, Qt::QueuedConnection);
}

void RunController::openModel(const QString& path, const QStringList& operatorLibraries)
{
    ++generation_; // results of the old model are of no use
    worker_->cancel();
    openingModel_ = true;
    setBusy(true);
    onWorker([path, device = document_->device(), operatorLibraries](
                 RunWorker& w) { w.openModel(path, device, operatorLibraries); });
}

void RunController::cancel()
{
    worker_->cancel();
}

void RunController::exportTensors(const QString& path)
{
    onWorker([path](RunWorker& w) { w.exportTensors(path); });
}

void RunController::startRecording(const RecordRequest& request)
{
    onWorker([request](RunWorker& w) { w.record(request); });
}

void RunController::cancelRecording()
{
    worker_->cancelRecording();
}

void RunController::exportRecording(const QString& path)
{
    onWorker([path](RunWorker& w) { w.exportRecording(path); });
}

void RunController::trainProbes(const ProbeRequest& request)
{
    onWorker([request](RunWorker& w) { w.trainProbes(request); });
}

void RunController::cancelProbes()
{
    worker_->cancelProbes();
}

void RunController::exportProbe(const QString& layer, const QString& path, bool stateDict)
{
    onWorker([layer, path, stateDict](RunWorker& w) { w.exportProbe(layer, path, stateDict); });
}

void RunController::applyProbeFile(const QString& path, const QStringList& images, const ModelSetup& setup)
{
    onWorker([path, images, setup](RunWorker& w) { w.applyProbeFile(path, images, setup); });
}

void RunController::adviseSetup(const ModelSetup& current)
{
    onWorker([current](RunWorker& w) { w.adviseSetup(current); });
}

void RunController::saveSetupIntoModel(const QString& path, const ModelSetup& setup)
{
    onWorker([path, setup](RunWorker& w) { w.saveSetupIntoModel(path, setup); });
}

void RunController::attribute(const GradCamRequest& request)
{
    onWorker([request](RunWorker& w) { w.attribute(request); });
}

void RunController::patch(const PatchRequest& request)
{
    onWorker([request](RunWorker& w) { w.patch(request); });
}

void RunController::scheduleRun()
{
    if (busy_)
        worker_->cancel(); // what it computes now is already outdated
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
    onWorker([request](RunWorker& w) { w.run(request); });
}

void RunController::finishRun(const RunSnapshotPtr& snapshot)
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
    Q_EMIT busyChanged(busy);
}

} // namespace torchscope
