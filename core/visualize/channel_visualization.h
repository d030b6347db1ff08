#pragma once

// A channel's page: its feature visualisation (visualize/activation_maximization.h) and its map
// over the images that excite it most, as plain values the window draws. No Torch in this header.

#include "common/float_tensor.h"
#include "graph/analysis_context.h"
#include "preprocess/preprocessing.h"
#include "visualize/visualization.h"

#include <string>
#include <vector>

namespace torchscope {

struct VisualizeRequest {
    std::string model;
    std::string device = "cpu";
    Preprocessing preprocessing;
    VisualizeConfig config; // one objective
    std::vector<std::string> topImages; // also the channel's map over each of these images
    bool mapsOnly = false; // only the maps over the top images (the image is known)
    // The key an optimised image is cached under: the model, its device, input setup and every
    // setting (not the top images: their maps are quick and depend on the recording).
    std::string cacheKey() const;
};

struct ChannelVisualization {
    std::string key; // the request's cacheKey()
    bool mapsOnly = false; // only the maps are set
    FloatTensor image; // [H, W, 3] in [0, 1]: the optimised image
    double value = 0.0; // its objective, untransformed
    int steps = 0;
    bool cancelled = false;
    std::vector<std::string> warnings;
    // Per top image: the input as the model saw it [H, W, 3] and the channel's map over it [h, w],
    // scaled to [0, 1] on one scale from mapLow to mapHigh (a channel may be negative everywhere).
    std::vector<FloatTensor> topPictures;
    std::vector<FloatTensor> topMaps;
    float mapLow = 0.f, mapHigh = 0.f;
};

// The analysis "visualize". Progress counts optimisation steps, each with its objective as the
// value. The maps failing (an unreadable image) is a warning, not a failure.
struct VisualizeAnalysis {
    using Request = VisualizeRequest;
    using Result = ChannelVisualization;
    static constexpr const char* name = "visualize";
    static Result run(AnalysisContext& context, const Request& request);
};

} // namespace torchscope
