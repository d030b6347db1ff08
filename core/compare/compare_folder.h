#pragma once

// Comparisons over a folder of images, as the Compare tab runs them: two models (CKA), two
// checkpoints, or one model in two precisions (compare/compare_run.h), and one image through a
// layer of each run for a clicked cell (compare/layer_pair_maps.h). No Torch in this header.

#include "compare/comparison.h"
#include "compare/layer_pair_maps.h"
#include "graph/analysis_context.h"
#include "preprocess/preprocessing.h"

#include <string>

namespace torchscope {

struct CompareRequest {
    CompareConfig config;
    std::string modelA;
    std::string modelB; // Cka, Checkpoints
    std::string folder; // images; subfolders are read too
    Preprocessing preprocessing; // model A's input setup, for both
    int batch = 16;
    std::string device = "cpu"; // A and B (Precision chooses its own)
};

// The analysis "compare". Throws torchscope::Error for a folder without images.
struct CompareAnalysis {
    using Request = CompareRequest;
    using Result = CompareResult;
    static constexpr const char* name = "compare";
    static Result run(AnalysisContext& context, const Request& request);
};

// One image through a layer of each of a comparison's two runs.
struct LayerMapsRequest {
    CompareRequest compare; // the runs, as the comparison made them
    std::string image;
    std::string layerA, layerB;
};

// The analysis "layer-maps": a clicked cell of the comparison.
struct LayerMapsAnalysis {
    using Request = LayerMapsRequest;
    using Result = LayerPairResult;
    static constexpr const char* name = "layer-maps";
    static Result run(AnalysisContext& context, const Request& request);
};

} // namespace torchscope
