#include "attention/attention_maps.h"

#include "attention/attention_statistics.h"
#include "attention/legrad.h"
#include "attribution/input_attributions.h"
#include "common/error.h"
#include "common/strings.h"
#include "graph/engine.h"
#include "graph/selector.h"
#include "model/batch_limit.h"
#include "model/model.h"

#include <ATen/ATen.h>
#include <torch/script.h>

#include <algorithm>
#include <cmath>

namespace torchscope {
namespace {

// The kernel side of the first Conv2d whose kernel is square and larger than 1: a ViT's patch
// embedding (kernel = stride = patch). 0 when there is none.
int64_t patchEmbeddingSize(const Model& model)
{
    for (const auto& named : model.module().named_modules()) {
        const auto* info = model.find(named.name);
        if (!info || info->shortType != "Conv2d" || !named.value.hasattr("weight"))
            continue;
        const at::Tensor weight = named.value.attr("weight").toTensor();
        if (weight.dim() == 4 && weight.size(2) == weight.size(3) && weight.size(2) > 1)
            return weight.size(2);
    }
    return 0;
}

// The query rows a map is read from: one token, or the mean over the patch queries.
at::Tensor queryRows(const at::Tensor& probabilities, const TokenLayout& layout, int64_t query)
{
    if (query >= 0)
        return probabilities.select(2, query);
    if (layout.prefix > 0)
        return probabilities.select(2, 0); // the class token
    return probabilities.mean(2);
}

struct LayerFigures {
    at::Tensor probabilities, headMap, entropy, distance;
};

LayerFigures layerFigures(const at::Tensor& attention, const TokenLayout& layout, int64_t query, bool keep)
{
    LayerFigures figures;
    const at::Tensor p = attention.to(at::kCPU, at::kFloat);
    if (query >= p.size(2))
        throw Error("--query " + std::to_string(query) + " is out of range: the attention has "
            + std::to_string(p.size(2)) + " queries");
    if (keep)
        figures.probabilities = p;
    const int64_t images = layout.images;
    if (p.size(0) != images && (p.size(0) % images != 0 || layout.spatial))
        throw Error("attention of " + std::to_string(p.size(0)) + " rows for " + std::to_string(images)
            + " images: neither one per image nor windows of each");
    // Windows (Swin, MaxViT) come image by image: each head's entropy is the mean over an image's windows.
    figures.entropy = attentionEntropy(p).view({images, -1, p.size(1)}).mean(1);
    if (!layout.spatial)
        return figures;
    const int64_t patches = layout.gridHeight * layout.gridWidth;
    figures.headMap = queryRows(p, layout, query)
                          .narrow(-1, layout.prefix, patches)
                          .reshape({p.size(0), p.size(1), layout.gridHeight, layout.gridWidth});
    figures.distance = attentionDistance(p, layout.prefix, layout.gridHeight, layout.gridWidth)
        * static_cast<double>(layout.patchSize);
    return figures;
}

at::Tensor rolloutMap(const std::vector<at::Tensor>& layers, const TokenLayout& layout, const AttentionRequest& request)
{
    const at::Tensor rolled = attentionRollout(layers, request.headFusion, request.discard);
    const at::Tensor rows = queryRows(rolled.unsqueeze(1), layout, request.query).squeeze(1);
    return rows.narrow(-1, layout.prefix, layout.gridHeight * layout.gridWidth)
        .reshape({rolled.size(0), 1, layout.gridHeight, layout.gridWidth});
}

// Every layer's keys must lie as the first layer's do for the maps; a module that computes attention
// more than once in a forward is read at its first.
std::vector<std::string> layerNotes(const std::vector<std::string>& paths, const std::vector<at::Tensor>& layers,
    const RunResult& run, const TokenLayout& layout)
{
    std::vector<std::string> notes;
    for (size_t l = 0; l < layers.size(); ++l) {
        if (layers[l].dim() != 4)
            throw Error("'" + paths[l] + "' gives attention of shape " + shapeToString(layers[l].sizes().vec())
                + ", not [N, heads, queries, keys]");
        if (layout.spatial && layers[l].size(-1) != layout.tokens)
            throw Error("'" + paths[l] + "' attends over " + std::to_string(layers[l].size(-1)) + " keys, '"
                + paths.front() + "' over " + std::to_string(layout.tokens)
                + ": the maps need one token layout; pick layers that share it with --layer");
        if (run.find(paths[l] + ":attention#1"))
            notes.push_back(
                "'" + paths[l] + "' computes attention more than once in a forward; the maps read its first");
    }
    return notes;
}

at::Tensor concatenated(const std::vector<at::Tensor>& parts)
{
    return parts.empty() ? at::Tensor() : at::cat(parts);
}

} // namespace

std::vector<std::string> attentionLayers(const Model& model, const std::vector<std::string>& selectors)
{
    std::vector<std::string> holding, layers;
    for (const auto& info : model.modules())
        if (info.holdsAttention && info.called)
            holding.push_back(info.path);
    if (selectors.empty())
        layers = holding;
    for (const auto& selector : selectors)
        for (const auto& path : resolveSelector(model, selector)) {
            const bool attends = std::find(holding.begin(), holding.end(), path) != holding.end();
            if (!attends && selector == path)
                throw Error("module '" + path + "' computes no attention in its own code; "
                    + (holding.empty() ? "no module of this model does"
                                       : "these do: "
                                + join(std::vector<std::string>(
                                           holding.begin(), holding.begin() + std::min<size_t>(holding.size(), 4)),
                                    ", ")
                                + (holding.size() > 4 ? " ..." : "")));
            if (attends && std::find(layers.begin(), layers.end(), path) == layers.end())
                layers.push_back(path);
        }
    if (layers.empty())
        throw Error(selectors.empty() ? "this model computes no attention TorchScope recognises "
                                        "(scaled_dot_product_attention, nn.MultiheadAttention, softmax over q·kᵀ)"
                                      : "no module the --layer selectors name computes attention");
    // The model's order: rollout multiplies the layers as they run.
    std::vector<std::string> ordered;
    for (const auto& info : model.modules())
        if (std::find(layers.begin(), layers.end(), info.path) != layers.end())
            ordered.push_back(info.path);
    return ordered;
}

TokenLayout tokenLayout(const Model& model, int64_t tokens, int64_t height, int64_t width, int64_t patchSize)
{
    TokenLayout layout;
    layout.tokens = tokens;
    std::vector<int64_t> candidates;
    if (patchSize > 0)
        candidates = {patchSize};
    else if (const int64_t embedding = patchEmbeddingSize(model); embedding > 0)
        candidates = {embedding};
    else
        candidates = {16, 14, 32, 8};
    constexpr int64_t MostPrefixTokens = 16; // a class token and registers; more is not a ViT layout
    for (const int64_t patch : candidates) {
        const int64_t h = height / patch, w = width / patch;
        const int64_t prefix = tokens - h * w;
        if (h > 0 && w > 0 && prefix >= 0 && prefix <= MostPrefixTokens) {
            layout = {true, prefix, h, w, patch, tokens};
            return layout;
        }
    }
    return layout;
}

at::Tensor attentionRollout(const std::vector<at::Tensor>& layers, const std::string& fusion, double discard)
{
    if (layers.empty())
        throw Error("rollout needs at least one attention layer");
    if (fusion != "mean" && fusion != "max" && fusion != "min")
        throw Error("head fusion '" + fusion + "' is not mean, max or min");
    if (!(discard >= 0.0 && discard < 1.0))
        throw Error("--discard must be in [0, 1), got " + std::to_string(discard));
    at::Tensor result;
    for (const auto& layer : layers) {
        const at::Tensor p = layer.to(at::kCPU, at::kDouble);
        if (p.dim() != 4 || p.size(2) != p.size(3))
            throw Error("rollout needs square attention [N, heads, T, T] in every layer");
        at::Tensor fused = fusion == "mean" ? p.mean(1)
            : fusion == "max"               ? std::get<0>(p.max(1))
                                            : std::get<0>(p.min(1));
        const int64_t tokens = fused.size(1);
        if (discard > 0.0) {
            at::Tensor flat = fused.reshape({fused.size(0), -1}).clone();
            const auto lowest = static_cast<int64_t>(static_cast<double>(flat.size(1)) * discard);
            const at::Tensor indices = std::get<1>(flat.topk(lowest, 1, false));
            // The class token's attention to itself stays (vit-explain's rule).
            flat.scatter_(1, indices, 0.0);
            flat.select(1, 0).copy_(fused.reshape({fused.size(0), -1}).select(1, 0));
            fused = flat.reshape_as(fused);
        }
        at::Tensor a = 0.5 * fused + 0.5 * at::eye(tokens, fused.options()).unsqueeze(0);
        a = a / a.sum(-1, true);
        result = result.defined() ? at::matmul(a, result) : a;
    }
    return result.to(at::kFloat);
}

AttentionResult attentionMaps(
    Engine& engine, const at::Tensor& images, const AttentionRequest& request, const ProgressCallback& progress)
{
    if (images.dim() != 4 || images.size(0) == 0)
        throw Error(
            "attention maps explain images [N, C, H, W], at least one; got " + shapeToString(images.sizes().vec()));
    for (const auto& method : request.methods)
        if (method != AttentionHeads && method != AttentionRollout && method != AttentionLeGrad)
            throw Error("unknown attention method '" + method + "'; expected heads, rollout or legrad");
    AttentionResult result;
    result.layers = attentionLayers(engine.model(), request.layers);
    const bool keep = contains(request.methods, AttentionHeads);
    const bool rollout = contains(request.methods, AttentionRollout),
               legrad = contains(request.methods, AttentionLeGrad);

    Request run;
    run.scores = request.scores;
    for (const auto& layer : result.layers)
        run.grabs.push_back(GrabSpec{layer, CaptureKind::Attention, 0});

    const int64_t total = images.size(0);
    const int64_t perSample = request.bytesPerSample > 0 ? request.bytesPerSample : 64 * images[0].numel() * 4;
    const int64_t batch = batchUnderCap(engine.model(), request.memoryBytes, perSample, total);
    std::vector<std::vector<at::Tensor>> probabilities(result.layers.size()), maps(result.layers.size()),
        entropy(result.layers.size()), distance(result.layers.size());
    std::vector<at::Tensor> rollouts, legrads;
    for (int64_t start = 0; start < total; start += batch) {
        const at::Tensor chunk = images.narrow(0, start, std::min(batch, total - start));
        const RunResult out = engine.run(run, forwardInputsFromBatch(engine.model(), chunk));
        std::vector<at::Tensor> layers;
        for (const auto& layer : result.layers)
            layers.push_back(out.tensor(layer + ":attention"));
        if (start == 0) {
            result.layout = tokenLayout(
                engine.model(), layers.front().size(-1), images.size(2), images.size(3), request.patchSize);
            result.notes = layerNotes(result.layers, layers, out, result.layout);
        }
        TokenLayout layout = result.layout;
        layout.images = chunk.size(0);
        for (size_t l = 0; l < layers.size(); ++l) {
            LayerFigures figures = layerFigures(layers[l], layout, request.query, keep);
            probabilities[l].push_back(figures.probabilities);
            maps[l].push_back(figures.headMap);
            entropy[l].push_back(figures.entropy);
            distance[l].push_back(figures.distance);
        }
        if ((rollout || legrad) && !result.layout.spatial)
            throw Error("rollout and LeGrad map attention to the image's patches, but these keys ("
                + std::to_string(result.layout.tokens)
                + ") are not a class token and the patch grid (windowed attention, as Swin's, or a "
                  "patch size that is not the model's: give --patch-size)");
        if (rollout)
            rollouts.push_back(rolloutMap(layers, result.layout, request));
        if (legrad) {
            LeGradResult maps = leGrad(engine, chunk, result.layers, result.layout, request.target, request.scores);
            legrads.push_back(maps.maps);
            result.targets.insert(result.targets.end(), maps.targets.begin(), maps.targets.end());
        }
        result.images += chunk.size(0);
        if (progress && !progress({result.images, total, "images", {}}) && result.images < total) {
            result.cancelled = true;
            break;
        }
    }
    for (size_t l = 0; l < result.layers.size(); ++l) {
        if (keep)
            result.probabilities.push_back(concatenated(probabilities[l]));
        result.entropy.push_back(concatenated(entropy[l]));
        if (result.layout.spatial) {
            result.headMaps.push_back(concatenated(maps[l]));
            result.distance.push_back(concatenated(distance[l]));
        }
    }
    result.rollout = concatenated(rollouts);
    result.legrad = concatenated(legrads);

    const TokenLayout& layout = result.layout;
    result.layout.images = result.images;
    if (!layout.spatial)
        result.notes.push_back("the keys (" + std::to_string(layout.tokens)
            + " per query) are not a class token and the image's patch grid, as in windowed attention: "
              "no maps over the image, only the probabilities and their entropy");
    else if (layout.prefix == 0)
        result.notes.push_back("no class token: the maps show the mean over the patch queries' attention");
    else if (layout.prefix > 1)
        result.notes.push_back(std::to_string(layout.prefix - 1)
            + " more token(s) between the class token and the patches (register or distillation tokens) are "
              "left out of the maps");
    return result;
}

} // namespace torchscope
