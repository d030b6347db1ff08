#pragma once

// Attention maps over image files: the one operation behind the window's Attention tab. Every
// attention layer's probabilities for each image (attention/attention_maps.h), each head's entropy
// and mean attention distance, rollout and LeGrad, as plain values the window draws; a head's map
// for any query token is read from the kept probabilities without running the model again.
// Torch-free header.

#include "common/float_tensor.h"
#include "common/progress.h"
#include "graph/analysis_context.h"
#include "model/model_setup.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace torchscope {

class Engine;
struct ExportManifest;

struct AttentionWorkbenchRequest {
    std::vector<std::string> images;
    ModelSetup setup; // preprocessing, the scores element, the labels
    std::vector<std::string> layers; // selectors; empty: every attention module
    std::string headFusion = "mean"; // rollout
    double discard = 0.0; // rollout
    bool legrad = true;
    int64_t target = -1; // LeGrad's class; -1: each image's prediction
    int64_t memoryBytes = int64_t{1} << 30; // what one batch of images may take
    // What the kept probabilities (every layer's, for every image) may take: the images beyond are
    // left out, with why.
    int64_t keptBytes = int64_t{2} << 30;
};

struct AttentionWorkbenchImage {
    std::string image;
    FloatTensor picture; // [H, W, 3] in [0, 1]: the input as the model saw it
    FloatTensor rollout; // [h, w] (empty when the keys are not the patch grid)
    FloatTensor legrad; // [h, w] (empty without LeGrad)
    int64_t target = -1; // LeGrad's class
};

struct AttentionWorkbenchLayer {
    std::string layer;
    int64_t heads = 0;
    FloatTensor probabilities; // [N, heads, queries, keys]
    std::vector<std::vector<double>> entropy; // [image][head], nats
    std::vector<std::vector<double>> distance; // [image][head], pixels (empty when not the patch grid)
};

struct AttentionWorkbenchResult {
    std::vector<AttentionWorkbenchImage> images; // in request order, without those that failed
    std::vector<AttentionWorkbenchLayer> layers; // in the model's order
    int64_t heads = 0, tokens = 0; // heads: the most any layer has
    bool spatial = false; // the keys are the prefix tokens and the patch grid
    int64_t prefix = 0, gridHeight = 0, gridWidth = 0, patchSize = 0;
    std::vector<std::string> notes;
    std::vector<std::pair<std::string, std::string>> failures; // image, why
    bool cancelled = false;
};

// Images whose input size differs from the first image's are failures. Throws torchscope::Error
// for a model without attention or no readable image.
AttentionWorkbenchResult runAttentionWorkbench(
    Engine& engine, const AttentionWorkbenchRequest& request, const ProgressCallback& progress = {});

// The analysis "attention": runAttentionWorkbench on the context's model.
struct AttentionAnalysis {
    using Request = AttentionWorkbenchRequest;
    using Result = AttentionWorkbenchResult;
    static constexpr const char* name = "attention";
    static Result run(AnalysisContext& context, const Request& request);
};

// One head's attention of `query` over the patches, [gridHeight, gridWidth]; query -1: the class
// token (the mean over the patch queries without one). Empty when the keys are not the patch grid
// or the layer, image or head does not exist.
FloatTensor attentionHeadMap(
    const AttentionWorkbenchResult& result, size_t layer, int64_t image, int64_t head, int64_t query);

// The token of the patch under (x, y) in [0, 1) of the image; -1 when the keys are not the grid.
int64_t patchToken(const AttentionWorkbenchResult& result, double x, double y);

// As torchscope-cli attention writes them: PATH:attention, PATH:entropy, PATH:distance, rollout,
// legrad, targets. Returns the keys the format left out.
std::vector<std::string> writeAttentionMaps(
    const std::string& path, const AttentionWorkbenchResult& result, const ExportManifest* manifest = nullptr);

} // namespace torchscope
