#pragma once

// Where a vision transformer's heads look. From the probabilities each attention module computes
// (the grab PATH:attention, graph/attention_taps.h, exact even where the model fuses its kernel):
//  - per-head maps: one query's attention over the image's patches (the class token's by default);
//  - per head its entropy and mean attention distance (Dosovitskiy et al. 2021, Fig. 7);
//  - attention rollout (Abnar & Zuidema 2020): per layer the heads fused (mean, max or min), the
//    lowest `discard` fraction set to 0 (never the class token's attention to itself), the
//    residual added as 0.5·A + 0.5·I, rows renormalised, the layers multiplied in order;
//  - LeGrad (Bousselham et al. 2024, as torchcam 0.5's LeGrad computes it): per layer the gradient
//    of the class score read from that layer's block (through the model's final norm and head)
//    with respect to its attention, ReLU, averaged over heads and queries, the layers averaged,
//    each image's map scaled to [0, 1].
// Tokens: the keys are [prefix tokens, then the h × w patch grid]; the prefix (class token,
// register tokens) is found from the image size and the patch size.

#include "attention/attention_names.h"
#include "common/progress.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace torchscope {

class Engine;
class Model;

struct AttentionRequest {
    std::vector<std::string> layers; // selectors of attention modules; empty: every one the model has
    std::vector<std::string> methods{AttentionHeads}; // heads, rollout, legrad
    int64_t query = -1; // a token index; -1: the class token (without one: the mean over the patch queries)
    std::string headFusion = "mean"; // rollout: mean, max or min
    double discard = 0.0; // rollout: [0, 1)
    int64_t target = -1; // legrad: the class; -1: each image's predicted class
    std::string scores; // the output element with the class scores ("" finds it)
    int64_t patchSize = 0; // 0: the model's patch embedding's (its first Conv2d's kernel)
    int64_t memoryBytes = int64_t{1} << 30; // what one batch of images may take
    int64_t bytesPerSample = 0; // what one image's forward costs; 0: 64 × its size
};

// How the keys lie over the image.
struct TokenLayout {
    bool spatial = false; // the keys are [prefix, h × w patches] (false: e.g. Swin's windows)
    int64_t prefix = 0; // class and register tokens before the patches
    int64_t gridHeight = 0, gridWidth = 0, patchSize = 0;
    int64_t tokens = 0;
    int64_t images = 0; // how many images the attention's first dim holds (windows: several rows each)
};

struct AttentionResult {
    std::vector<std::string> layers; // the attention modules, in the model's order
    std::vector<at::Tensor> probabilities; // per layer [N, heads, queries, keys] float32 (with heads)
    std::vector<at::Tensor> headMaps; // per layer [N, heads, h, w]: the query's attention over the patches
    std::vector<at::Tensor> entropy; // per layer [N, heads]: mean over queries of -Σ p ln p (nats)
    std::vector<at::Tensor> distance; // per layer [N, heads]: mean over patch queries of Σ p·d (pixels)
    at::Tensor rollout; // [N, 1, h, w] (with rollout)
    at::Tensor legrad; // [N, 1, h, w] (with legrad)
    std::vector<int64_t> targets; // legrad's class per image
    TokenLayout layout;
    std::vector<std::string> notes; // what a reader should know: register tokens, no class token ...
    int64_t images = 0; // how many were done (fewer when cancelled)
    bool cancelled = false;
};

// The attention modules a request's selectors name (every module holding attention for none).
// Throws torchscope::Error for a named module that computes no attention, naming those that do.
std::vector<std::string> attentionLayers(const Model& model, const std::vector<std::string>& selectors);

// How `tokens` keys lie over an image of `height` × `width`; patchSize 0: the model's.
TokenLayout tokenLayout(const Model& model, int64_t tokens, int64_t height, int64_t width, int64_t patchSize);

// Rollout of layers' probabilities [N, H, T, T] (in order): [N, T, T].
at::Tensor attentionRollout(const std::vector<at::Tensor>& layers, const std::string& fusion, double discard);

// images: [N, C, H, W]. Progress counts images; cancelling keeps what the done batches gave.
AttentionResult attentionMaps(
    Engine& engine, const at::Tensor& images, const AttentionRequest& request, const ProgressCallback& progress = {});

} // namespace torchscope
