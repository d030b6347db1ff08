#include "attribution/sanity_checks.h"

#include "attribution/faithfulness.h"
#include "attribution/map_similarity.h"
#include "attribution/parameter_randomisation.h"
#include "common/error.h"
#include "common/strings.h"
#include "graph/engine.h"
#include "model/model.h"
#include "probe/linear_probe.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <set>

namespace torchscope {
namespace {

// The map each method is compared by: a layer method's upsampled to the input.
std::map<std::string, at::Tensor> comparedMaps(
    const InputAttributionResult& result, const std::vector<std::string>& methods)
{
    std::map<std::string, at::Tensor> maps;
    for (const auto& method : methods) {
        maps[method] = *inputSizedMap(result.maps, method);
    }
    return maps;
}

LayerSimilarity compare(const std::string& layer, const std::string& type, const at::Tensor& original,
    const at::Tensor& randomised, bool keep)
{
    LayerSimilarity s;
    s.layer = layer;
    s.type = type;
    const at::Tensor a = pixelImportance(original, original.size(2), original.size(3));
    const at::Tensor b = pixelImportance(randomised, randomised.size(2), randomised.size(3));
    for (int64_t i = 0; i < original.size(0); ++i) {
        s.spearmanAbs.push_back(spearmanCorrelation(original[i].abs(), randomised[i].abs()));
        s.spearman.push_back(spearmanCorrelation(original[i], randomised[i]));
        s.ssim.push_back(a.size(1) >= 7 && a.size(2) >= 7 ? structuralSimilarity(a[i], b[i]) : NAN);
    }
    if (keep)
        s.maps = randomised;
    return s;
}

} // namespace

RandomisationMode parseRandomisationMode(const std::string& name)
{
    if (name == "cascading")
        return RandomisationMode::Cascading;
    if (name == "independent")
        return RandomisationMode::Independent;
    throw Error("unknown randomisation mode '" + name + "'; expected cascading or independent");
}

std::string randomisationModeName(RandomisationMode mode)
{
    return mode == RandomisationMode::Cascading ? "cascading" : "independent";
}

SanityResult checkSanity(Engine& original, const std::shared_ptr<Model>& scratch, const at::Tensor& images,
    const SanityRequest& request, const ProgressCallback& progress)
{
    SanityResult report;
    Model& copy = *scratch;
    Engine randomisedEngine(scratch);
    std::vector<std::string> layers = randomisableLayers(copy, &report.skipped);
    if (layers.empty())
        throw Error("the model has no layer TorchScope can randomise (Linear, convolutions, normalisation)");
    if (const auto& probe = request.attribution.probe; probe && images.size(0) > 0) {
        // The probe's score depends on what runs before the layer it reads, found by running to
        // that layer and seeing which modules were reached. The probe itself stays as trained: it
        // is the question put to the model whose parameters are checked.
        Request cut;
        cut.grabs.push_back(GrabSpec::parse("*"));
        cut.truncateAt = probe->layer;
        const RunResult reached = original.run(cut, forwardInputsFromBatch(original.model(), images.slice(0, 0, 1)));
        std::set<std::string> before;
        for (const auto& [key, value] : reached.values)
            before.insert(key.substr(0, key.find('#')));
        std::vector<std::string> kept;
        for (const auto& layer : layers) {
            if (before.count(layer))
                kept.push_back(layer);
            else
                report.afterProbe.push_back(layer + " (" + copy.find(layer)->shortType + ")");
        }
        layers = kept;
        if (layers.empty())
            throw Error(
                "no layer TorchScope can randomise runs before '" + probe->layer + "', the layer the probe reads");
    }
    if (request.mode == RandomisationMode::Cascading)
        std::reverse(layers.begin(), layers.end());
    const auto total = static_cast<int64_t>(layers.size());

    const InputAttributionResult first = attributeInputs(original, images, request.attribution);
    report.targets = first.targets;
    report.targetDescriptions = first.targetDescriptions;
    const auto originalMaps = comparedMaps(first, request.attribution.methods);
    for (const auto& method : request.attribution.methods)
        report.methods.push_back(MethodSanity{method, originalMaps.at(method), {}});

    InputAttributionRequest fixed = request.attribution;
    fixed.targets = first.targets;
    for (int64_t k = 0; k < total; ++k) {
        if (progress && !progress(Progress{k, total, "layers", {}})) {
            report.cancelled = true;
            break;
        }
        const std::string& layer = layers[static_cast<size_t>(k)];
        const LayerState saved
            = request.mode == RandomisationMode::Independent ? saveLayerState(copy, layer) : LayerState{};
        reinitialiseLayer(copy, layer, request.seed);
        const auto randomised = comparedMaps(attributeInputs(randomisedEngine, images, fixed), fixed.methods);
        if (request.mode == RandomisationMode::Independent)
            restoreLayerState(copy, layer, saved);
        const std::string type = copy.find(layer)->shortType;
        for (auto& method : report.methods)
            method.layers.push_back(
                compare(layer, type, method.original, randomised.at(method.method), request.keepMaps));
    }
    if (progress && !report.cancelled)
        progress(Progress{total, total, "layers", {}});
    return report;
}

} // namespace torchscope
