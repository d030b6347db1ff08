// The run worker's probe, Grad-CAM and patching jobs (see run_worker.h). Runs on the worker thread.
#include "run_worker.h"
#include "run_worker_state.h"

#include "attribution/grad_cam.h"
#include "common/error.h"
#include "common/tensor_conversion.h"
#include "compare/input_difference.h"
#include "graph/model_output.h"
#include "graph/patching.h"
#include "imaging/image_folder.h"
#include "imaging/image_tensor.h"
#include "imaging/probe_folder.h"
#include "preprocess/preprocess_tensor.h"
#include "probe/activation_cache.h"
#include "probe/layer_sweep.h"
#include "probe/model_extender.h"

#include <ATen/ATen.h>
#include <torch/script.h>

#include <QDir>
#include <QStandardPaths>

#include <thread>

namespace torchscope {
namespace {

// What the model saw, as a picture. [H, W, 3] in [0, 1].
FloatTensor pictureOf(const at::Tensor& input, const Preprocessing& preprocessing)
{
    return toFloatTensor(pictureOfInput(input, preprocessing));
}

FloatTensor mapOf(const at::Tensor& map)
{
    return toFloatTensor(normalizeMap(map.to(at::kCPU, at::kFloat)).contiguous());
}

std::pair<double, double> rangeOf(const at::Tensor& map)
{
    return {map.min().item<double>(), map.max().item<double>()};
}

} // namespace

void RunWorker::trainProbes(const ProbeRequest& request)
{
    probesCancelled_ = false;
    if (!state_->engine) {
        Q_EMIT failed(WorkerTask::Probes, tr("Error Training Probe"), tr("No model is open."));
        return;
    }
    try {
        if (!state_->activationCache) {
            const QString cache = QStandardPaths::writableLocation(QStandardPaths::CacheLocation);
            state_->activationCache = std::make_shared<ActivationCache>(
                cache.isEmpty() ? std::string() : QDir(cache).filePath("activations").toStdString());
        }
        const ImageFolder folder = ImageFolder::scan(request.folder, request.setup.labels);
        const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
        ProbeSamples samples = folderSamples(folder, request.setup.preprocessing, 16, threads);
        const ProbePooling pooling = parseProbePooling(request.pooling);
        const ProbeDataset dataset = collectProbeDataset(*state_->engine, request.layers, pooling, samples,
            state_->activationCache.get(), [this](int64_t done, int64_t total) {
                Q_EMIT probeProgress(done, total, tr("activations"));
                return !probesCancelled_;
            });
        auto snapshot = std::make_shared<ProbeSnapshot>();
        snapshot->classNames = dataset.classNames;
        snapshot->cachedLayers = dataset.cachedLayers;
        snapshot->failures = dataset.failures;
        snapshot->cancelled = dataset.cancelled;
        if (!dataset.cancelled) {
            snapshot->samples = dataset.labels.size(0);
            ProbeTrainingConfig config;
            config.seed = request.seed;
            config.validationFraction = request.validationFraction;
            const auto layerCount = static_cast<qint64>(request.layers.size());
            const LayerSweep sweep = sweepLayers(dataset, request.layers, config, [&](int layer, int epoch) {
                if (epoch == 0)
                    Q_EMIT probeProgress(layer, layerCount, tr("training"));
                return !probesCancelled_;
            });
            snapshot->cancelled = sweep.cancelled;
            snapshot->best = sweep.best;
            for (const auto& l : sweep.layers) {
                state_->probes[l.layer] = LinearProbe{l.layer, pooling, dataset.classNames, l.probe};
                snapshot->layers.push_back({l.layer, l.features, l.probe.trainAccuracy, l.probe.validationAccuracy,
                    l.probe.bestEpoch, l.probe.trainLoss, l.probe.validationLoss, l.probe.confusion});
            }
        }
        Q_EMIT probesFinished(snapshot);
    } catch (const std::exception& e) {
        Q_EMIT failed(WorkerTask::Probes, tr("Error Training Probe"), QString::fromStdString(e.what()));
    }
}

void RunWorker::exportProbe(const QString& layer, const QString& path, bool stateDict)
{
    try {
        const auto it = state_->probes.find(layer.toStdString());
        if (it == state_->probes.end())
            throw Error("no probe has been trained on '" + layer.toStdString() + "'");
        if (stateDict)
            saveProbeStateDict(path.toStdString(), it->second);
        else
            saveProbeModule(path.toStdString(), it->second);
        Q_EMIT probeExported(path);
    } catch (const std::exception& e) {
        Q_EMIT failed(WorkerTask::Probes, tr("Error Exporting Probe"), QString::fromStdString(e.what()));
    }
}

void RunWorker::applyProbeFile(const QString& path, const QStringList& images, const ModelSetup& setup)
{
    if (!state_->engine) {
        Q_EMIT failed(WorkerTask::Probes, tr("Error Importing Probe"), tr("No model is open."));
        return;
    }
    try {
        const ProbeExtension probe = loadProbeExtension(path.toStdString());
        if (probe.layer.empty())
            throw Error(
                "'" + path.toStdString() + "' does not say which layer it reads (it is not a TorchScope probe)");
        ModelExtender extender(state_->model); // checks the layer and moves the probe to the model's device
        extender.registerProbe("probe", probe);
        auto scores = std::make_shared<ProbeScores>();
        scores->file = path.toStdString();
        scores->layer = probe.layer;
        scores->classNames = probe.classNames;
        for (const auto& image : images) {
            // Only the probe's output is wanted: the forward stops after its layer.
            const ExtendedOutput out = extender.forward(
                forwardInputsFromBatch(*state_->model, loadImageBatch({image.toStdString()}, setup.preprocessing)),
                false);
            scores->images.push_back(image.toStdString());
            scores->probabilities.push_back(probeProbabilities(out.extensions.at("probe")));
        }
        Q_EMIT probeScores(scores);
    } catch (const std::exception& e) {
        Q_EMIT failed(WorkerTask::Probes, tr("Error Importing Probe"), QString::fromStdString(e.what()));
    }
}

void RunWorker::attribute(const AttributionRequest& request)
{
    if (!state_->engine) {
        Q_EMIT failed(WorkerTask::Attribution, tr("Error Computing Grad-CAM"), tr("No model is open."));
        return;
    }
    try {
        const at::Tensor input = loadImageBatch({request.image}, request.setup.preprocessing);
        GradientTarget target{request.targetClass, std::nullopt};
        if (request.region.size() == 4)
            target.region = std::array<int64_t, 4>{request.region[0], request.region[1], request.region[2], request.region[3]};
        const Attribution a = computeAttribution(*state_->engine, input, request.layer, target, request.setup.scores, request.setup.labels);
        auto snapshot = std::make_shared<AttributionSnapshot>();
        snapshot->image = request.image;
        snapshot->layer = request.layer;
        snapshot->target = a.targets.front();
        snapshot->targetDescription = a.descriptions.front();
        snapshot->outputKind = a.kind;
        snapshot->picture = pictureOf(input, request.setup.preprocessing);
        snapshot->gradCam = mapOf(a.gradCamUpsampled[0]);
        snapshot->saliency = mapOf(a.saliency[0]);
        snapshot->gradCamRange = rangeOf(a.gradCamUpsampled[0]);
        snapshot->saliencyRange = rangeOf(a.saliency[0]);
        snapshot->gradCamNote = a.notes.front();
        Q_EMIT attributionFinished(snapshot);
    } catch (const std::exception& e) {
        Q_EMIT failed(WorkerTask::Attribution, tr("Error Computing Grad-CAM"), QString::fromStdString(e.what()));
    }
}

void RunWorker::patch(const PatchRequest& request)
{
    const QString title = request.ablate ? tr("Error Ablating")
        : request.difference             ? tr("Error Comparing Inputs")
                                         : tr("Error Patching");
    if (!state_->engine) {
        Q_EMIT failed(WorkerTask::Patch, title, tr("No model is open."));
        return;
    }
    try {
        std::vector<GrabSpec> grabs;
        if (!request.compareLayer.empty())
            grabs.push_back(GrabSpec{request.compareLayer, CaptureKind::Output, 0});
        const at::Tensor a = loadImageBatch({request.imageA}, request.setup.preprocessing);
        std::vector<std::pair<std::string, const RunResult*>> runs;
        std::vector<at::Tensor> inputs;
        PatchRuns patched;
        AblationRuns ablated;
        RunResult runA, runB;
        if (request.difference) {
            const at::Tensor b = loadImageBatch({request.imageB}, request.setup.preprocessing);
            Request both;
            both.grabs = grabs;
            both.grabOutput(request.layer);
            runA = state_->engine->run(both, forwardInputsFromBatch(*state_->model, a));
            runB = state_->engine->run(both, forwardInputsFromBatch(*state_->model, b));
            runs = {{"A", &runA}, {"B", &runB}};
            inputs = {a, b};
        } else if (request.ablate) {
            ablated = ablateChannels(
                *state_->engine, forwardInputsFromBatch(*state_->model, a), request.layer, request.channels, grabs);
            runs = {{"A", &ablated.original}, {"A, channels zeroed", &ablated.ablated}};
            inputs = {a, a};
        } else {
            const at::Tensor b = loadImageBatch({request.imageB}, request.setup.preprocessing);
            patched = patchActivation(*state_->engine, forwardInputsFromBatch(*state_->model, a),
                forwardInputsFromBatch(*state_->model, b), request.layer, grabs);
            runs = {{"A", &patched.a}, {"B", &patched.b}, {"A with B's " + request.layer, &patched.patched}};
            inputs = {a, b, a};
        }
        auto snapshot = std::make_shared<PatchSnapshot>();
        snapshot->layer = request.layer;
        snapshot->compareLayer = request.compareLayer;
        if (request.difference)
            snapshot->difference = std::make_shared<const InputDifference>(
                compareInputs(runA.tensor(request.layer), runB.tensor(request.layer)));
        std::vector<at::Tensor> maps;
        for (const auto& [title, run] : runs) {
            PatchColumn column;
            column.title = title;
            column.predictions
                = predictImage(findScores(run->values.front().second, request.setup.scores), 0, request.setup.labels, 3).top;
            snapshot->columns.push_back(std::move(column));
            if (!request.compareLayer.empty()) {
                at::Tensor m = run->tensor(request.compareLayer).to(at::kCPU, at::kFloat);
                if (const at::Tensor tokens = tokensAsMaps(m); tokens.defined())
                    m = tokens;
                maps.push_back(m.dim() == 4 ? m[0].mean(0) : m.reshape({1, -1}));
            }
        }
        // One scale for all columns, so that a map that changed looks changed.
        const at::Tensor all = maps.empty() ? at::Tensor() : normalizeMap(at::stack(maps));
        for (size_t i = 0; i < snapshot->columns.size(); ++i) {
            snapshot->columns[i].picture = pictureOf(inputs[i], request.setup.preprocessing);
            if (all.defined())
                snapshot->columns[i].map = toFloatTensor(all[static_cast<int64_t>(i)].contiguous());
        }
        Q_EMIT patchFinished(snapshot);
    } catch (const std::exception& e) {
        Q_EMIT failed(WorkerTask::Patch, title, QString::fromStdString(e.what()));
    }
}

} // namespace torchscope
