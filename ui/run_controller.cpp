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
    qRegisterMetaType<RunRequest>();
    qRegisterMetaType<RunSnapshotPtr>();
    qRegisterMetaType<RecordRequest>();
    qRegisterMetaType<RecordSnapshotPtr>();
    qRegisterMetaType<ProbeRequest>();
    qRegisterMetaType<ProbeSnapshotPtr>();
    qRegisterMetaType<ProbeScoresPtr>();
    qRegisterMetaType<AttributionRequest>();
    qRegisterMetaType<AttributionSnapshotPtr>();
    qRegisterMetaType<PatchRequest>();
    qRegisterMetaType<PatchSnapshotPtr>();
    qRegisterMetaType<ModelSetup>();
    qRegisterMetaType<SetupAdvice>();

    worker_->moveToThread(&thread_);
    thread_.setObjectName("torchscope-run");
    thread_.start();

    debounce_.setSingleShot(true);
    debounce_.setInterval(120);
    connect(&debounce_, &QTimer::timeout, this, &RunController::startRun);
    connect(document_, &Document::requestChanged, this, &RunController::scheduleRun);

    connect(worker_.get(), &RunWorker::modelOpened, this, [this](const ModelSummary& summary) {
        openingModel_ = false;
        document_->setModel(summary);
        Q_EMIT modelOpened(QString::fromStdString(summary.path));
    });
    connect(worker_.get(), &RunWorker::modelFailed, this, [this](const QString& path, const QString& message) {
        openingModel_ = false;
        setBusy(false);
        Q_EMIT failed(tr("Error Opening Model"), tr("Could not open '%1':\n%2").arg(path, message));
    });
    connect(worker_.get(), &RunWorker::progress, this, [this](int generation, int done, int total) {
        if (generation == generation_)
            Q_EMIT progress(done, total);
    });
    connect(worker_.get(), &RunWorker::runFinished, this, [this](const RunSnapshotPtr& snapshot) {
        if (snapshot->generation != generation_)
            return; // a newer request is on its way
        setBusy(false);
        document_->setSnapshot(snapshot);
        Q_EMIT runCompleted(snapshot->seconds, static_cast<int>(snapshot->images.size()),
            static_cast<int>(snapshot->failures.size()), snapshot->cancelled);
    });
    connect(worker_.get(), &RunWorker::runFailed, this,
        [this](int generation, const QString& message, bool setupProblem) {
            if (generation != generation_)
                return;
            setBusy(false);
            if (setupProblem)
                Q_EMIT setupProblemFound(message);
            else
                Q_EMIT failed(tr("Error Running Model"), message);
        });
    connect(worker_.get(), &RunWorker::exported, this, &RunController::exported);
    connect(worker_.get(), &RunWorker::recordProgress, this, &RunController::recordProgress);
    connect(worker_.get(), &RunWorker::recordFinished, this, &RunController::recordFinished);
    connect(worker_.get(), &RunWorker::recordFailed, this,
        [this](const QString& message) { Q_EMIT failed(tr("Error Recording"), message); });
    connect(worker_.get(), &RunWorker::exportFailed, this, [this](const QString& path, const QString& message) {
        Q_EMIT failed(tr("Error Exporting"), tr("Could not write '%1':\n%2").arg(path, message));
    });
}

RunController::~RunController()
{
    worker_->cancel();
    thread_.requestInterruption();
    thread_.quit();
    thread_.wait();
}

void RunController::openModel(const QString& path, const QStringList& operatorLibraries)
{
    ++generation_; // results of the old model are of no use
    worker_->cancel();
    openingModel_ = true;
    setBusy(true);
    QMetaObject::invokeMethod(worker_.get(), "openModel", Qt::QueuedConnection, Q_ARG(QString, path),
        Q_ARG(QString, document_->device()), Q_ARG(QStringList, operatorLibraries));
}

void RunController::exportTensors(const QString& path)
{
    QMetaObject::invokeMethod(worker_.get(), "exportTensors", Qt::QueuedConnection, Q_ARG(QString, path));
}

void RunController::cancel()
{
    worker_->cancel();
}

void RunController::startRecording(const RecordRequest& request)
{
    QMetaObject::invokeMethod(worker_.get(), "record", Qt::QueuedConnection, Q_ARG(torchscope::RecordRequest, request));
}

void RunController::cancelRecording()
{
    worker_->cancelRecording();
}

void RunController::exportRecording(const QString& path)
{
    QMetaObject::invokeMethod(worker_.get(), "exportRecording", Qt::QueuedConnection, Q_ARG(QString, path));
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
        Q_EMIT failed(tr("Error Running Model"), QString::fromStdString(e.what()));
        return;
    }
    setBusy(true);
    Q_EMIT progress(0, static_cast<int>(request.images.size()));
    QMetaObject::invokeMethod(worker_.get(), "run", Qt::QueuedConnection, Q_ARG(torchscope::RunRequest, request));
}

void RunController::setBusy(bool busy)
{
    if (busy == busy_)
        return;
    busy_ = busy;
    Q_EMIT busyChanged(busy);
}

} // namespace torchscope
