#include "attention/attention_workbench.h"

#include "attention/attention_maps.h"
#include "common/error.h"
#include "common/strings.h"
#include "common/tensor_conversion.h"
#include "export/manifest.h"
#include "export/write_tensors.h"
#include "graph/engine.h"
#include "imaging/same_size_images.h"
#include "preprocess/preprocess_tensor.h"

#include <ATen/ATen.h>

#include <algorithm>

namespace torchscope {
namespace {

std::vector<std::vector<double>> rowsOf(const at::Tensor& values) // [N, H] -> per image, per head
{
    std::vector<std::vector<double>> rows;
    const at::Tensor d = values.to(at::kDouble).contiguous();
    for (int64_t i = 0; i < d.size(0); ++i)
        rows.emplace_back(d[i].data_ptr<double>(), d[i].data_ptr<double>() + d.size(1));
    return rows;
}

} // namespace

AttentionWorkbenchResult runAttentionWorkbench(
    Engine& engine, const AttentionWorkbenchRequest& request, const ProgressCallback& progress)
{
    AttentionWorkbenchResult result;
    SameSizeImages loaded = loadSameSizeImages(request.images, request.setup.preprocessing,
        "give the Input Setup a resize and crop", "attention maps need at least one image");
    for (size_t i = 0; i < loaded.paths.size(); ++i) {
        AttentionWorkbenchImage image;
        image.image = loaded.paths[i];
        image.picture = std::move(loaded.pictures[i]);
        result.images.push_back(std::move(image));
    }
    result.failures = std::move(loaded.failures);
    const at::Tensor images = loaded.batch;
    AttentionRequest maps;
    maps.layers = request.layers;
    maps.methods = {AttentionHeads};
    maps.headFusion = request.headFusion;
    maps.discard = request.discard;
    maps.target = request.target;
    maps.scores = request.setup.scores;
    maps.memoryBytes = request.memoryBytes;
    // Rollout and LeGrad need the patch grid: asked only where the first image shows there is one.
    int64_t probeHeads = 0;
    const TokenLayout probe = [&] {
        AttentionRequest first = maps;
        first.layers = attentionLayers(engine.model(), request.layers);
        first.layers.resize(1);
        const AttentionResult one = attentionMaps(engine, images.narrow(0, 0, 1), first);
        probeHeads = one.probabilities.front().size(1);
        return one.layout;
    }();
    // Every layer's probabilities of every image are kept for the window's queries: as many images
    // as fit in keptBytes (estimated from the first layer's shape).
    const auto layers = attentionLayers(engine.model(), request.layers).size();
    const int64_t perImage = static_cast<int64_t>(layers) * probeHeads * probe.tokens * probe.tokens * 4 * 2;
    const int64_t fit = std::max<int64_t>(1, request.keptBytes / std::max<int64_t>(1, perImage));
    at::Tensor kept = images;
    if (images.size(0) > fit) {
        kept = images.narrow(0, 0, fit);
        for (size_t i = static_cast<size_t>(fit); i < result.images.size(); ++i)
            result.failures.emplace_back(result.images[i].image,
                "the attention of more than " + std::to_string(fit) + " images (" + std::to_string(perImage >> 20)
                    + " MiB each) is not kept; show fewer at a time, or use torchscope-cli attention");
        result.images.resize(static_cast<size_t>(fit));
    }
    if (probe.spatial) {
        maps.methods.push_back(AttentionRollout);
        if (request.legrad)
            maps.methods.push_back(AttentionLeGrad);
    }
    const AttentionResult out = attentionMaps(engine, kept, maps, progress);
    result.cancelled = out.cancelled;
    result.images.resize(static_cast<size_t>(out.images));
    result.notes = out.notes;
    result.tokens = out.layout.tokens;
    result.spatial = out.layout.spatial;
    result.prefix = out.layout.prefix;
    result.gridHeight = out.layout.gridHeight;
    result.gridWidth = out.layout.gridWidth;
    result.patchSize = out.layout.patchSize;
    for (size_t l = 0; l < out.layers.size(); ++l) {
        AttentionWorkbenchLayer layer;
        layer.layer = out.layers[l];
        layer.heads = out.probabilities[l].size(1);
        layer.probabilities = toFloatTensor(out.probabilities[l]);
        layer.entropy = rowsOf(out.entropy[l]);
        if (l < out.distance.size())
            layer.distance = rowsOf(out.distance[l]);
        result.heads = std::max(result.heads, layer.heads);
        result.layers.push_back(std::move(layer));
    }
    for (size_t i = 0; i < result.images.size(); ++i) {
        auto& image = result.images[i];
        if (out.rollout.defined())
            image.rollout = toFloatTensor(out.rollout[static_cast<int64_t>(i)][0]);
        if (out.legrad.defined()) {
            image.legrad = toFloatTensor(out.legrad[static_cast<int64_t>(i)][0]);
            image.target = out.targets.at(i);
        }
    }
    return result;
}

FloatTensor attentionHeadMap(
    const AttentionWorkbenchResult& result, size_t layer, int64_t image, int64_t head, int64_t query)
{
    FloatTensor map;
    if (!result.spatial || layer >= result.layers.size())
        return map;
    const FloatTensor& p = result.layers[layer].probabilities; // [N, H, Q, K]
    const int64_t heads = p.shape[1], queries = p.shape[2], tokens = p.shape[3];
    if (image < 0 || image >= p.shape[0] || head < 0 || head >= heads || tokens != result.tokens)
        return map;
    const int64_t patches = result.gridHeight * result.gridWidth;
    const auto at = [&](int64_t q, int64_t k) {
        return p.values[static_cast<size_t>(((image * heads + head) * queries + q) * tokens + k)];
    };
    map.shape = {result.gridHeight, result.gridWidth};
    map.values.assign(static_cast<size_t>(patches), 0.0f);
    std::vector<int64_t> rows;
    if (query >= 0 && query < queries)
        rows = {query};
    else if (result.prefix > 0 || queries == 1)
        rows = {0};
    else
        for (int64_t q = 0; q < queries; ++q)
            rows.push_back(q);
    for (const int64_t q : rows)
        for (int64_t k = 0; k < patches; ++k)
            map.values[static_cast<size_t>(k)] += at(q, result.prefix + k) / static_cast<float>(rows.size());
    return map;
}

int64_t patchToken(const AttentionWorkbenchResult& result, double x, double y)
{
    if (!result.spatial || x < 0 || y < 0 || x >= 1 || y >= 1)
        return -1;
    const auto row = static_cast<int64_t>(y * static_cast<double>(result.gridHeight));
    const auto col = static_cast<int64_t>(x * static_cast<double>(result.gridWidth));
    return result.prefix + row * result.gridWidth + col;
}

std::vector<std::string> writeAttentionMaps(
    const std::string& path, const AttentionWorkbenchResult& result, const ExportManifest* manifest)
{
    NamedValues values;
    ExportManifest described = manifest ? *manifest : ExportManifest{};
    const auto add
        = [&](const std::string& key, const at::Tensor& value, const std::string& module, const std::string& what) {
              values.emplace_back(key, value);
              described.keys.push_back({key, module, what});
          };
    const auto table = [](const std::vector<std::vector<double>>& rows) {
        std::vector<at::Tensor> stacked;
        for (const auto& row : rows)
            stacked.push_back(at::tensor(row, at::kFloat));
        return at::stack(stacked);
    };
    for (const auto& layer : result.layers) {
        add(layer.layer + ":attention", toTensor(layer.probabilities), layer.layer,
            "attention probabilities [N, heads, queries, keys]");
        add(layer.layer + ":entropy", table(layer.entropy), layer.layer, "each head's attention entropy (nats)");
        if (!layer.distance.empty())
            add(layer.layer + ":distance", table(layer.distance), layer.layer,
                "each head's mean attention distance (pixels)");
    }
    std::vector<at::Tensor> rollout, legrad;
    std::vector<int64_t> targets;
    for (const auto& image : result.images) {
        if (!image.rollout.empty())
            rollout.push_back(toTensor(image.rollout).unsqueeze(0));
        if (!image.legrad.empty()) {
            legrad.push_back(toTensor(image.legrad).unsqueeze(0));
            targets.push_back(image.target);
        }
    }
    if (!rollout.empty())
        add("rollout", at::stack(rollout), "", "attention rollout over the patches");
    if (!legrad.empty()) {
        add("legrad", at::stack(legrad), "", "LeGrad over the patches");
        add("targets", at::tensor(targets, at::kLong), "", "LeGrad's class");
    }
    return writeTensors(path, values, &described);
}

AttentionWorkbenchResult AttentionAnalysis::run(AnalysisContext& context, const Request& request)
{
    return runAttentionWorkbench(*context.models.engine(context.model), request, context.progress);
}

} // namespace torchscope
