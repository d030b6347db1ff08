// The interactive lane's model, runs and setup, and the batch lane's recordings and probe training.
#include "jobs/workbench_jobs.h"

#include "common/error.h"
#include "graph/engine.h"
#include "graph/setup_advice.h"
#include "imaging/folder_run.h"
#include "imaging/image_folder.h"
#include "imaging/probe_folder.h"
#include "jobs/job_runner.h"
#include "jobs/workbench_state.h"
#include "model/model.h"
#include "model/model_setup.h"
#include "probe/activation_cache.h"
#include "probe/layer_sweep.h"
#include "record/recording_files.h"

#include <ATen/Parallel.h>

#include <QCoreApplication>
#include <QDir>
#include <QStandardPaths>

#include <algorithm>
#include <thread>

namespace torchscope {

std::shared_ptr<WorkbenchState> makeWorkbenchState()
{
    return std::make_shared<WorkbenchState>();
}

namespace jobs {
namespace {

int coreCount()
{
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// The window's exports name what they hold as the CLI's do (export/manifest.h).
ExportManifest windowManifest(const std::string& what, const ModelKey& key, const ModelSetup& setup,
    const std::vector<EditSpec>& edits, const std::optional<std::string>& truncation)
{
    ExportManifest m;
    m.command = "TorchScope window: " + what;
    m.model = key.path;
    m.device = key.device;
    m.dtype = key.dtype;
    m.preprocessing = setup.preprocessing;
    m.labels = setup.labels;
    for (const auto& edit : edits)
        m.edits.push_back(edit.toString());
    m.truncation = truncation.value_or("");
    return m;
}

} // namespace

ModelSummary openModel(JobContext& job, WorkbenchState& state, const ModelKey& key)
{
    at::set_num_threads(coreCount());
    job.models().forget(key.path); // opened afresh: the file may have changed since
    // Loaded before anything of the open model is let go: a file that fails leaves it working.
    const auto model = job.models().model(JobLane::Interactive, key);
    auto engine = job.models().engine(JobLane::Interactive, key);
    const auto stored = storedSetup(*model);
    ModelSummary summary;
    summary.path = model->path();
    summary.device = model->device();
    summary.signature = model->forwardSignature();
    summary.modules = model->modules();
    summary.setup = stored.value_or(ModelSetup());
    summary.hasStoredSetup = stored.has_value();
    summary.frozenNote = model->frozenNote();
    if (const auto& exported = model->exportedProgram())
        summary.exportedNote = describeExportedProgram(*exported);
    state.key = key;
    state.model = model;
    state.runner.reset();
    state.engine = std::move(engine);
    state.runner = std::make_unique<ImageRunner>(model, *state.engine);
    return summary;
}

RunJobResultPtr runImages(JobContext& job, WorkbenchState& state, const RunRequest& request,
    const std::function<void(const ImageResult&)>& onImage)
{
    auto snapshot = std::make_shared<RunJobResult>();
    snapshot->generation = request.generation;
    snapshot->requestedImages = static_cast<int>(request.images.size());
    try {
        if (!state.runner)
            throw Error("no model is open");
        static_cast<ImageRunResult&>(*snapshot) = state.runner->run(
            request, [&](const Progress& p) { return job.progress(p.done, p.total); }, onImage);
        state.runManifest = windowManifest(
            "Export Recorded Tensors", state.key, request.setup, request.request.edits, request.request.truncateAt);
        for (const auto& image : snapshot->images) {
            state.runManifest.images.push_back({image.path, image.width, image.height});
            if (!image.gradientTarget.empty())
                state.runManifest.targets.push_back(image.gradientTarget);
        }
        for (const auto& grab : request.request.grabs)
            state.runManifest.settings.emplace_back("grab", grab.selector + grab.suffix());
        if (!snapshot->setupAdvice.empty())
            snapshot->error += "\n\n" + snapshot->setupAdvice + ": set the input in Model > Input Setup…";
    } catch (const std::exception& e) {
        snapshot->error = e.what(); // the request's own problem (unknown path, several inputs)
    }
    return snapshot;
}

QStringList exportTensors(WorkbenchState& state, const QString& path)
{
    if (!state.runner || !state.runner->hasRecorded())
        throw Error("nothing has been recorded yet: open images and run the model first");
    QStringList leftOut;
    for (const auto& key : state.runner->writeRecorded(path.toStdString(), &state.runManifest))
        leftOut << QString::fromStdString(key);
    return leftOut;
}

SetupAdvice adviseSetup(JobContext& job, const ModelKey& key, const ModelSetup& current)
{
    try {
        return torchscope::adviseSetup(*job.models().model(JobLane::Interactive, key), current);
    } catch (const std::exception& e) {
        SetupAdvice unknown;
        unknown.notes.push_back(std::string("the model could not be examined: ") + e.what());
        return unknown;
    }
}

void saveSetupIntoModel(const ModelKey& key, const QString& path, const ModelSetup& setup)
{
    writeModelWithSetup(key.path, path.toStdString(), setup);
}

RecordJobResultPtr record(JobContext& job, WorkbenchState& state, const ModelKey& key, const RecordRequest& request)
{
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
    const FolderRunResult summary = recordFolder(*job.models().engine(JobLane::Batch, key), *recorder, folder,
        request.setup.preprocessing, options, [&](const Progress& p) { return job.progress(p.done, p.total); });
    auto snapshot = std::make_shared<RecordJobResult>();
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
    for (const auto& grabbed : recorder->keys())
        snapshot->samples[grabbed] = recorder->samples(grabbed);
    snapshot->statistics = recorder->statistics();
    snapshot->topSamples = recorder->topSamples();
    snapshot->failures = summary.failures;
    RecordingSource source = recordingSource(folder);
    source.model = key.path;
    source.condition = request.condition;
    state.recordingSummary = recordingSummary(*recorder, summary, source);
    state.recordingManifest = windowManifest("Export Recording", key, request.setup, request.edits, std::nullopt);
    for (const auto& file : source.imageFiles)
        state.recordingManifest.images.push_back({file});
    state.recordingManifest.settings
        = {{"folder", request.folder}, {"reduce", request.reduction}, {"condition", request.condition}};
    state.recording = std::move(recorder);
    return snapshot;
}

QStringList exportRecording(WorkbenchState& state, const QString& path)
{
    if (!state.recording)
        throw Error("nothing has been recorded yet: start a folder run in the Recorders panel");
    QStringList leftOut;
    for (const auto& key :
        writeRecording(path.toStdString(), *state.recording, state.recordingSummary, &state.recordingManifest))
        leftOut << QString::fromStdString(key);
    return leftOut;
}

ProbeJobResultPtr trainProbes(JobContext& job, WorkbenchState& state, const ModelKey& key, const ProbeRequest& request)
{
    if (!state.activationCache) {
        const QString cache = QStandardPaths::writableLocation(QStandardPaths::CacheLocation);
        state.activationCache = std::make_shared<ActivationCache>(
            cache.isEmpty() ? std::string() : QDir(cache).filePath("activations").toStdString());
    }
    const ImageFolder folder = ImageFolder::scan(request.folder, request.setup.labels);
    ProbeSamples samples = folderSamples(folder, request.setup.preprocessing, 16, coreCount());
    const ProbePooling pooling = parseProbePooling(request.pooling);
    const QString activations = QCoreApplication::translate("torchscope::RunController", "activations");
    const QString training = QCoreApplication::translate("torchscope::RunController", "training");
    const ProbeDataset dataset
        = collectProbeDataset(*job.models().engine(JobLane::Batch, key), request.layers, pooling, samples,
            state.activationCache.get(), [&](const Progress& p) { return job.progress(p.done, p.total, activations); });
    auto snapshot = std::make_shared<ProbeJobResult>();
    snapshot->classNames = dataset.classNames;
    snapshot->cachedLayers = dataset.cachedLayers;
    snapshot->failures = dataset.failures;
    snapshot->cancelled = dataset.cancelled;
    if (dataset.cancelled)
        return snapshot;
    snapshot->samples = dataset.labels.size(0);
    ProbeTrainingConfig config;
    config.seed = request.seed;
    config.validationFraction = request.validationFraction;
    const auto layerCount = static_cast<qint64>(request.layers.size());
    const LayerSweepResult sweep = sweepLayers(dataset, request.layers, config, [&](const Progress& p) {
        return p.values.front() != 0 || job.progress(p.done, layerCount, training) ? !job.isCancelled() : false;
    });
    snapshot->cancelled = sweep.cancelled;
    snapshot->best = sweep.best;
    for (const auto& l : sweep.layers) {
        state.probes[l.layer] = LinearProbe{l.layer, pooling, dataset.classNames, l.probe};
        snapshot->layers.push_back({l.layer, l.features, l.probe.trainAccuracy, l.probe.validationAccuracy,
            l.probe.bestEpoch, l.probe.trainLoss, l.probe.validationLoss, l.probe.confusion});
    }
    return snapshot;
}

void exportProbe(WorkbenchState& state, const QString& layer, const QString& path, bool stateDict)
{
    const auto it = state.probes.find(layer.toStdString());
    if (it == state.probes.end())
        throw Error("no probe has been trained on '" + layer.toStdString() + "'");
    if (stateDict)
        saveProbeStateDict(path.toStdString(), it->second);
    else
        saveProbeModule(path.toStdString(), it->second);
}

} // namespace jobs
} // namespace torchscope
