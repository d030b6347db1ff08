#include "run_worker.h"
#include "run_worker_state.h"

#include "common/error.h"
#include "graph/engine.h"
#include "graph/setup_advice.h"
#include "imaging/folder_run.h"
#include "imaging/image_run.h"
#include "model/model.h"
#include "model/model_setup.h"
#include "record/recorder.h"
#include "record/recording_files.h"

#include <ATen/Parallel.h>
#include <torch/cuda.h>
#include <torch/script.h>

#include <algorithm>
#include <thread>

namespace torchscope {

RunWorker::RunWorker()
    : state_(std::make_unique<State>())
{ }

RunWorker::~RunWorker() = default;

QStringList RunWorker::availableDevices()
{
    QStringList devices{"cpu"};
    if (torch::cuda::is_available())
        devices.prepend("cuda");
    return devices;
}

void RunWorker::openModel(const QString& path, const QString& device, const QStringList& operatorLibraries)
{
    try {
        at::set_num_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
        LoadOptions options;
        options.device = device.toStdString();
        for (const auto& library : operatorLibraries)
            options.operatorLibraries.push_back(library.toStdString());
        auto model = Model::load(path.toStdString(), options);
        const auto stored = storedSetup(*model);
        ModelSummary summary;
        summary.path = model->path();
        summary.device = model->device();
        summary.signature = model->forwardSignature();
        summary.modules = model->modules();
        summary.setup = stored.value_or(ModelSetup());
        summary.hasStoredSetup = stored.has_value();
        summary.frozenNote = model->frozenNote();
        state_ = std::make_unique<State>();
        state_->model = model;
        state_->engine = std::make_unique<Engine>(model);
        state_->runner = std::make_unique<ImageRunner>(model, *state_->engine);
        state_->summary = summary;
        Q_EMIT modelOpened(summary);
    } catch (const std::exception& e) {
        Q_EMIT failed(WorkerTask::OpenModel, tr("Error Opening Model"),
            tr("Could not open '%1':\n%2").arg(path, QString::fromStdString(e.what())));
    }
}

void RunWorker::run(const RunRequest& request)
{
    cancelled_ = false;
    auto snapshot = std::make_shared<RunSnapshot>();
    snapshot->generation = request.generation;
    snapshot->requestedImages = static_cast<int>(request.images.size());
    try {
        if (!state_->runner)
            throw Error("no model is open");
        static_cast<ImageRunResult&>(*snapshot) = state_->runner->run(request, [&](const ImageRunProgress& p) {
            Q_EMIT progress(request.generation, p.done, p.total);
            return !cancelled_;
        });
        if (!snapshot->setupAdvice.empty())
            snapshot->error += "\n\n" + snapshot->setupAdvice + ": set the input in Model > Input Setup…";
    } catch (const std::exception& e) {
        snapshot->error = e.what(); // the request's own problem (unknown path, several inputs)
    }
    Q_EMIT runFinished(snapshot);
}

void RunWorker::exportTensors(const QString& path)
{
    try {
        if (!state_->runner || !state_->runner->hasRecorded())
            throw Error("nothing has been recorded yet: open images and run the model first");
        QStringList leftOut;
        for (const auto& key : state_->runner->writeRecorded(path.toStdString()))
            leftOut << QString::fromStdString(key);
        Q_EMIT exported(path, leftOut);
    } catch (const std::exception& e) {
        Q_EMIT failed(WorkerTask::Export, tr("Error Exporting"),
            tr("Could not write '%1':\n%2").arg(path, QString::fromStdString(e.what())));
    }
}

void RunWorker::record(const RecordRequest& request)
{
    recordingCancelled_ = false;
    try {
        if (!state_->engine)
            throw Error("no model is open");
        RecorderConfig config;
        config.grabs = request.grabs;
        config.reduction = parseReduction(request.reduction);
        config.condition = Condition::parse(request.condition);
        config.targetClass = request.targetClass;
        config.scores = request.setup.scores;
        config.edits = request.edits;
        const ImageFolder folder = ImageFolder::scan(request.folder, request.setup.labels);
        auto recorder = std::make_unique<Recorder>(config);
        FolderRunOptions options;
        options.batchSize = request.batchSize;
        options.decodeThreads = 2;
        const FolderRunSummary summary = recordFolder(*state_->engine, *recorder, folder, request.setup.preprocessing,
            options, [this](const FolderRunProgress& p) {
                Q_EMIT recordProgress(p.imagesDone, p.imagesTotal);
                return !recordingCancelled_;
            });
        auto snapshot = std::make_shared<RecordSnapshot>();
        snapshot->cancelled = summary.cancelled;
        snapshot->images = summary.images;
        snapshot->selected = summary.selected;
        snapshot->seconds = summary.seconds;
        snapshot->imagesPerSecond = summary.imagesPerSecond;
        snapshot->labelSource = folder.labelSource;
        for (const auto& edit : request.edits)
            snapshot->edits.push_back(edit.toString());
        for (const auto& image : folder.images)
            snapshot->imagePaths.push_back(image.path);
        for (const auto& key : recorder->keys())
            snapshot->samples[key] = recorder->samples(key);
        snapshot->statistics = recorder->statistics();
        snapshot->topSamples = recorder->topSamples();
        snapshot->failures = summary.failures;
        RecordingSource source = recordingSource(folder);
        source.model = state_->model->path();
        source.condition = request.condition;
        state_->recordingSummary = recordingSummary(*recorder, summary, source);
        state_->recording = std::move(recorder);
        Q_EMIT recordFinished(snapshot);
    } catch (const std::exception& e) {
        Q_EMIT failed(WorkerTask::Record, tr("Error Recording"), QString::fromStdString(e.what()));
    }
}

void RunWorker::adviseSetup(const ModelSetup& current)
{
    if (!state_->model)
        return;
    try {
        Q_EMIT setupAdvised(torchscope::adviseSetup(*state_->model, current));
    } catch (const std::exception& e) {
        SetupAdvice unknown;
        unknown.notes.push_back(std::string("the model could not be examined: ") + e.what());
        Q_EMIT setupAdvised(unknown);
    }
}

void RunWorker::saveSetupIntoModel(const QString& path, const ModelSetup& setup)
{
    try {
        if (!state_->model)
            throw Error("no model is open");
        writeModelWithSetup(state_->model->path(), path.toStdString(), setup);
        Q_EMIT setupSaved(path);
    } catch (const std::exception& e) {
        Q_EMIT failed(WorkerTask::Setup, tr("Error Saving Setup"),
            tr("Could not write '%1':\n%2").arg(path, QString::fromStdString(e.what())));
    }
}

void RunWorker::exportRecording(const QString& path)
{
    try {
        if (!state_->recording)
            throw Error("nothing has been recorded yet: start a folder run in the Recorders panel");
        QStringList leftOut;
        for (const auto& key : writeRecording(path.toStdString(), *state_->recording, state_->recordingSummary))
            leftOut << QString::fromStdString(key);
        Q_EMIT exported(path, leftOut);
    } catch (const std::exception& e) {
        Q_EMIT failed(WorkerTask::Export, tr("Error Exporting"),
            tr("Could not write '%1':\n%2").arg(path, QString::fromStdString(e.what())));
    }
}

} // namespace torchscope
