#pragma once

// Activation patching, channel ablation and input differences over image files: the one operation
// behind the window's Patching view and `torchscope-cli patch`.

#include "common/float_tensor.h"
#include "common/progress.h"
#include "compare/input_difference.h"
#include "graph/analysis_context.h"
#include "graph/output_kinds.h"
#include "graph/request.h"
#include "model/model_setup.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace torchscope {

struct ExportManifest;

class Engine;

enum class PatchMode {
    Patch, // A, B, and A with `layer`'s output replaced by B's
    Ablate, // A, and A with `channels` of `layer` set to zero
    Difference // A and B at `layer`: A, B and A − B, channels ranked by how much they differ
};
PatchMode parsePatchMode(const std::string& name); // "patch", "ablate", "difference"
std::string patchModeName(PatchMode mode);

struct PatchRequest {
    PatchMode mode = PatchMode::Patch;
    std::string imageA;
    std::string imageB; // not for Ablate
    std::string layer;
    std::vector<int64_t> channels; // Ablate
    std::string compareLayer; // a later layer whose maps are shown side by side ("": none)
    std::vector<EditSpec> edits; // zero / scale edits in force in every run (the module tree's)
    ModelSetup setup;
};

struct PatchColumn {
    std::string key; // "a", "b", "patched", "ablated": its keys in writePatch
    std::string title; // "A", "B", "A with B's layer3", "A, channels zeroed"
    std::vector<Prediction> predictions; // the top 3
    FloatTensor scores; // the model's class scores for the image ([classes]; empty when it has none)
    FloatTensor picture; // [H, W, 3]
    FloatTensor compareOutput; // compareLayer's output for the image, as the model gave it
    FloatTensor map; // [h, w]: compareLayer's mean over channels, in [0, 1] over all columns
};

struct PatchResult {
    PatchMode mode = PatchMode::Patch;
    std::string layer;
    std::string compareLayer;
    std::vector<PatchColumn> columns; // A, B (not for Ablate), then the patched or ablated run
    std::shared_ptr<const InputDifference> difference; // Difference: the maps at `layer`
    // The values the columns' maps show at 0 and 1 (the mean over channels of compareLayer).
    float mapLow = 0.f;
    float mapHigh = 0.f;
};

// Throws torchscope::Error naming what is wrong (an unknown layer, a missing channel, sizes that
// cannot be patched). Progress counts the model runs.
PatchResult patchImages(Engine& engine, const PatchRequest& request, const ProgressCallback& progress = {});

// The analysis "patch": patchImages on the context's model.
struct PatchAnalysis {
    using Request = PatchRequest;
    using Result = PatchResult;
    static constexpr const char* name = "patch";
    static Result run(AnalysisContext& context, const Request& request);
};

// The columns as one file (.pt, .npz or .safetensors): "COLUMN/scores" and "COLUMN/COMPARE_LAYER"
// per column (COLUMN: a, b, patched or ablated), and for Difference "a", "b", "difference" and
// "ranked_channels". Returns the keys the format left out. A manifest is written beside.
std::vector<std::string> writePatch(
    const std::string& path, const PatchResult& result, const ExportManifest* manifest = nullptr);

} // namespace torchscope
