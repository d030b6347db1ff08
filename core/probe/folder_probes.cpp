#include "probe/folder_probes.h"

#include "common/error.h"
#include "graph/engine.h"
#include "imaging/image_folder.h"
#include "imaging/image_tensor.h"
#include "model/model.h"
#include "probe/activation_cache.h"
#include "probe/layer_sweep.h"
#include "probe/linear_probe.h"
#include "probe/model_extender.h"
#include "probe/probe_folder.h"

#include <algorithm>
#include <thread>

namespace torchscope {

std::shared_ptr<ActivationCache> makeActivationCache(const std::string& folder)
{
    return std::make_shared<ActivationCache>(folder);
}

ProbeResult ProbeAnalysis::run(AnalysisContext& context, const Request& request)
{
    const ImageFolder folder = ImageFolder::scan(request.folder, request.setup.labels);
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    ProbeSamples samples = folderSamples(folder, request.setup.preprocessing, 16, cores);
    const ProbePooling pooling = parseProbePooling(request.pooling);
    const ProbeDataset dataset = collectProbeDataset(*context.models.engine(context.model), request.layers, pooling,
        samples, request.cache.get(), [&](const Progress& p) {
            return context.reportProgress({p.done, p.total, "activations", {}});
        });
    ProbeResult result;
    result.classNames = dataset.classNames;
    result.cachedLayers = dataset.cachedLayers;
    result.failures = dataset.failures;
    result.cancelled = dataset.cancelled;
    if (dataset.cancelled)
        return result;
    result.samples = dataset.labels.size(0);
    ProbeTrainingConfig config;
    config.seed = request.seed;
    config.validationFraction = request.validationFraction;
    const auto layers = static_cast<int64_t>(request.layers.size());
    // The sweep reports each epoch (values: the epoch's loss; 0 at a layer's start): a layer's
    // start is a unit of progress, and a cancel is heard at every epoch.
    const LayerSweepResult sweep = sweepLayers(dataset, request.layers, config, [&](const Progress& p) {
        const bool layerStart = p.values.empty() || p.values.front() == 0;
        if (layerStart && !context.reportProgress({p.done, layers, "training", {}}))
            return false;
        return !context.isCancelled();
    });
    result.cancelled = sweep.cancelled;
    result.best = sweep.best;
    for (const auto& l : sweep.layers)
        result.layers.push_back({l.layer, l.features, l.probe.trainAccuracy, l.probe.validationAccuracy,
            l.probe.bestEpoch, l.probe.trainLoss, l.probe.validationLoss, l.probe.confusion,
            std::make_shared<const LinearProbe>(LinearProbe{l.layer, pooling, dataset.classNames, l.probe})});
    return result;
}

void saveTrainedProbe(const ProbeResult& result, const std::string& layer, const std::string& path, bool stateDict)
{
    const auto it = std::find_if(result.layers.begin(), result.layers.end(),
        [&](const ProbeLayerResult& l) { return l.layer == layer && l.probe; });
    if (it == result.layers.end())
        throw Error("no probe has been trained on '" + layer + "'");
    if (stateDict)
        saveProbeStateDict(path, *it->probe);
    else
        saveProbeModule(path, *it->probe);
}

ProbeScores ProbeScoresAnalysis::run(AnalysisContext& context, const Request& request)
{
    const auto model = context.models.model(context.model);
    const ProbeExtension probe = loadProbeExtension(request.file);
    if (probe.layer.empty())
        throw Error("'" + request.file + "' does not say which layer it reads (it is not a TorchScope probe)");
    ModelExtender extender(model); // checks the layer and moves the probe to the model's device
    extender.registerProbe("probe", probe);
    ProbeScores scores;
    scores.file = request.file;
    scores.layer = probe.layer;
    scores.classNames = probe.classNames;
    const auto total = static_cast<int64_t>(request.images.size());
    for (const auto& image : request.images) {
        // Only the probe's output is wanted: the forward stops after its layer.
        const ExtendedOutput out = extender.forward(
            forwardInputsFromBatch(*model, loadImageBatch({image}, request.setup.preprocessing)), false);
        scores.images.push_back(image);
        scores.probabilities.push_back(probeProbabilities(out.extensions.at("probe")));
        if (!context.reportProgress({static_cast<int64_t>(scores.images.size()), total, {}, {}}))
            break;
    }
    return scores;
}

} // namespace torchscope
