#include "compare/compare_run.h"

#include "common/error.h"
#include "common/strings.h"
#include "common/tensor_conversion.h"
#include "compare/cka.h"
#include "compare/layer_difference.h"
#include "graph/engine.h"
#include "graph/selector.h"
#include "model/model.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <map>

namespace torchscope {
namespace {

// One model as a comparison runs it: its engine, what it grabs and what its inputs become.
struct Side {
    std::string name;
    std::shared_ptr<Model> model;
    std::unique_ptr<Engine> engine;
    Request request;
    std::vector<std::string> layers;
    std::optional<at::ScalarType> dtype; // inputs cast to it; none: as they come
    std::string unavailable;
};

// Where a module's output comes in a forward, as far as the tree tells: after its descendants'
// (a block's output is its last child's), siblings in definition order. So "the first layer where
// two runs part" is the first in execution for sequential models; named_modules() order would put
// a block before the layers inside it.
std::map<std::string, std::pair<size_t, size_t>> outputOrder(const Model& model)
{
    const auto paths = model.paths(); // pre-order
    std::map<std::string, std::pair<size_t, size_t>> order;
    for (size_t i = 0; i < paths.size(); ++i) {
        size_t last = i;
        while (last + 1 < paths.size() && (paths[i].empty() || startsWith(paths[last + 1], paths[i] + ".")))
            ++last;
        const size_t depth = paths[i].empty() ? 0 : split(paths[i], '.').size();
        order[paths[i]] = {last, paths.size() - depth}; // deeper first among the same last descendant
    }
    return order;
}

// The modules the specs select, each once, in output order (the axis of every plot).
std::vector<std::string> resolveLayers(const Model& model, const std::vector<std::string>& specs,
    const std::string& which, std::vector<std::string>& warnings)
{
    if (specs.empty())
        throw Error("choose the layers of " + which
            + " to compare: paths, globs such as \"features.*\" or types such as type:Conv2d");
    std::vector<std::string> layers;
    for (const auto& spec : specs)
        for (auto& path : resolveSelector(model, spec, &warnings))
            if (std::find(layers.begin(), layers.end(), path) == layers.end())
                layers.push_back(std::move(path));
    const auto order = outputOrder(model);
    std::sort(layers.begin(), layers.end(), [&](const auto& x, const auto& y) { return order.at(x) < order.at(y); });
    return layers;
}

Side makeSide(std::string name, std::shared_ptr<Model> model, std::vector<std::string> layers)
{
    Side side;
    side.name = std::move(name);
    side.model = std::move(model);
    side.engine = std::make_unique<Engine>(side.model);
    side.layers = std::move(layers);
    for (const auto& layer : side.layers)
        side.request.grabOutput(layer);
    side.engine->prepare(side.request);
    return side;
}

// Each layer's output (its first call) on one batch.
std::vector<at::Tensor> activations(Side& side, const at::Tensor& batch, std::vector<std::string>& warnings)
{
    const c10::Device device(side.model->device());
    const at::Tensor input = side.dtype ? batch.to(device, *side.dtype) : batch.to(device);
    const RunResult result = side.engine->run(side.request, forwardInputsFromBatch(*side.model, input));
    for (const auto& w : result.warnings)
        appendUnique(warnings, w);
    std::vector<at::Tensor> values;
    for (const auto& layer : side.layers) {
        const c10::IValue* value = result.find(layer);
        if (value == nullptr || !value->isTensor())
            throw Error("layer " + layer + " of " + side.name + " returns "
                + (value == nullptr ? std::string("nothing") : value->tagKind())
                + ", not a tensor; compare takes layers whose output is one tensor");
        values.push_back(value->toTensor());
    }
    return values;
}

std::vector<at::Tensor> gramsOf(const std::vector<at::Tensor>& values, CkaFeatures features)
{
    std::vector<at::Tensor> grams;
    for (const auto& value : values)
        grams.push_back(linearGram(sampleFeatures(value, features)));
    return grams;
}

// What the batch loop did, in the result.
void keepLoop(CompareResult& result, const BatchLoop& loop)
{
    result.samples = loop.samples;
    result.cancelled = loop.cancelled;
    result.seconds = loop.seconds;
    result.failures = loop.failures;
}

void noteShortBatches(CompareResult& result)
{
    const int64_t left = result.samples - result.ckaSamples;
    if (left > 0)
        result.warnings.push_back(std::to_string(left) + " sample" + (left == 1 ? "" : "s")
            + " in batches of fewer than 4 left out of CKA (the unbiased HSIC needs 4 per batch)");
}

} // namespace

CompareResult compareModels(const std::shared_ptr<Model>& a, const std::shared_ptr<Model>& b,
    const CompareConfig& config, const BatchStream& stream, const ProgressCallback& progress)
{
    if (config.mode == CompareMode::Precision)
        throw Error("a precision comparison runs one model: use comparePrecisions");
    const at::NoGradGuard noGrad;
    CompareResult result;
    result.mode = config.mode;
    result.features = config.features;
    result.modelA = a->path();
    result.modelB = b->path();
    result.threshold = config.effectiveThreshold();
    const bool checkpoints = config.mode == CompareMode::Checkpoints;
    Side sideA = makeSide("model A", a, resolveLayers(*a, config.layers, "model A", result.warnings));
    std::vector<std::string> layersB;
    if (checkpoints) {
        for (const auto& layer : sideA.layers)
            requireCalledModule(*b, layer, "compare (model B, the second checkpoint)");
        layersB = sideA.layers;
    } else {
        layersB
            = resolveLayers(*b, config.layersB.empty() ? config.layers : config.layersB, "model B", result.warnings);
    }
    Side sideB = makeSide("model B", b, layersB);
    result.layersA = sideA.layers;
    result.layersB = sideB.layers;

    MinibatchCka cka(sideA.layers.size(), sideB.layers.size());
    std::vector<DifferenceAccumulator> differences;
    if (checkpoints)
        for (const auto& layer : sideA.layers)
            differences.emplace_back(layer);
    keepLoop(result, forEachBatch(stream, progress, [&](const ImageBatch& images) {
        const at::Tensor& batch = images.images;
        const auto valuesA = activations(sideA, batch, result.warnings);
        const auto valuesB = activations(sideB, batch, result.warnings);
        if (batch.size(0) >= 4) {
            cka.add(gramsOf(valuesA, config.features), gramsOf(valuesB, config.features));
            result.ckaSamples += batch.size(0);
        }
        for (size_t i = 0; i < differences.size(); ++i)
            differences[i].add(valuesA[i], valuesB[i]);
    }));
    result.cka = cka.values();
    result.ckaBatches = cka.batches();
    noteShortBatches(result);
    if (checkpoints) {
        Comparison comparison;
        comparison.name = "B";
        for (size_t i = 0; i < differences.size(); ++i) {
            LayerDifference d = differences[i].result();
            d.cka = result.ckaAt(i, i);
            if (!comparison.firstOver && !(d.cka >= result.threshold)) // NaN (undefined) counts as apart
                comparison.firstOver = i;
            comparison.layers.push_back(std::move(d));
        }
        result.comparisons.push_back(std::move(comparison));
    }
    return result;
}

CompareResult comparePrecisions(const std::string& path, const LoadOptions& options, const CompareConfig& config,
    const BatchStream& stream, const ProgressCallback& progress)
{
    const at::NoGradGuard noGrad;
    CompareResult result;
    result.mode = CompareMode::Precision;
    result.features = config.features;
    result.modelA = result.modelB = path;
    result.threshold = config.effectiveThreshold();

    LoadOptions referenceOptions = options;
    referenceOptions.device = "cpu";
    referenceOptions.dtype = "float64";
    const auto referenceModel = Model::load(path, referenceOptions);
    if (!referenceModel->frozenNote().empty())
        throw Error("a precision comparison converts the model's parameters to each dtype, but this model was "
                    "frozen (torch.jit.freeze): its weights are constants of the graph and stay as saved. "
                    "Compare the model saved before freezing.");
    Side reference = makeSide("the float64 reference", referenceModel,
        resolveLayers(*referenceModel, config.layers, "the model", result.warnings));
    reference.dtype = at::kDouble;
    result.layersA = result.layersB = reference.layers;

    const std::vector<Precision> precisions
        = config.precisions.empty() ? defaultPrecisions(resolveDevice("auto") != "cpu") : config.precisions;
    std::vector<Side> variants;
    std::vector<std::vector<DifferenceAccumulator>> differences;
    for (const auto& precision : precisions) {
        Side side;
        side.name = precision.name();
        try {
            LoadOptions variantOptions = options;
            variantOptions.device = precision.device;
            variantOptions.dtype = precision.dtype;
            side = makeSide(precision.name(), Model::load(path, variantOptions), reference.layers);
            side.dtype = scalarTypeNamed(precision.dtype);
        } catch (const Error& e) {
            side.unavailable = e.what();
        } catch (const c10::Error& e) {
            side.unavailable = torchErrorMessage(e.what_without_backtrace());
        }
        variants.push_back(std::move(side));
        // Loading (CUDA's start above all) takes a while: a cancel here stops before any batch.
        if (progress && !progress(Progress{0, stream.total, "images", {}})) {
            result.cancelled = true;
            stream.stop();
            return result;
        }
        differences.emplace_back();
        for (const auto& layer : reference.layers)
            differences.back().emplace_back(layer);
    }

    keepLoop(result, forEachBatch(stream, progress, [&](const ImageBatch& images) {
        const auto expected = activations(reference, images.images, result.warnings);
        for (size_t v = 0; v < variants.size(); ++v) {
            Side& side = variants[v];
            if (!side.unavailable.empty())
                continue;
            try {
                const auto values = activations(side, images.images, result.warnings);
                for (size_t i = 0; i < values.size(); ++i)
                    differences[v][i].add(expected[i], values[i]);
            } catch (const c10::Error& e) {
                side.unavailable = torchErrorMessage(e.what_without_backtrace());
            } catch (const Error& e) {
                side.unavailable = e.what();
            }
        }
    }));
    for (size_t v = 0; v < variants.size(); ++v) {
        Comparison comparison;
        comparison.name = variants[v].name;
        comparison.unavailable = variants[v].unavailable;
        if (comparison.unavailable.empty())
            for (size_t i = 0; i < differences[v].size(); ++i) {
                comparison.layers.push_back(differences[v][i].result());
                if (!comparison.firstOver && !(comparison.layers.back().relativeL2 <= result.threshold)) // NaN is over
                    comparison.firstOver = i;
            }
        result.comparisons.push_back(std::move(comparison));
    }
    return result;
}

} // namespace torchscope
