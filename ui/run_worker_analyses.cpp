// The run worker's probe, Grad-CAM and patching jobs (see run_worker.h). Runs on the worker thread.
#include "run_worker.h"
#include "run_worker_state.h"

#include "common/error.h"
#include "common/tensor_conversion.h"
#include "graph/model_output.h"
#include "imaging/grad_cam_images.h"
#include "imaging/image_folder.h"
#include "imaging/image_tensor.h"
#include "imaging/patch_images.h"
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

void RunWorker::attribute(const GradCamRequest& request)
{
    try {
        if (!state_->engine)
            throw Error("no model is open");
        Q_EMIT attributionFinished(std::make_shared<const GradCamResult>(computeGradCam(*state_->engine, request)));
    } catch (const std::exception& e) {
        Q_EMIT failed(WorkerTask::Attribution, tr("Error Computing Grad-CAM"), QString::fromStdString(e.what()));
    }
}

void RunWorker::patch(const PatchRequest& request)
{
    const QString title = request.mode == PatchMode::Ablate ? tr("Error Ablating")
        : request.mode == PatchMode::Difference             ? tr("Error Comparing Inputs")
                                                            : tr("Error Patching");
    try {
        if (!state_->engine)
            throw Error("no model is open");
        Q_EMIT patchFinished(std::make_shared<const PatchResult>(patchImages(*state_->engine, request)));
    } catch (const std::exception& e) {
        Q_EMIT failed(WorkerTask::Patch, title, QString::fromStdString(e.what()));
    }
}

} // namespace torchscope
