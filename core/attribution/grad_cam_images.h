#pragma once

// Grad-CAM and saliency over image files: the one operation behind the window's Grad-CAM view and
// `torchscope-cli gradcam`. Each image runs on its own (any sizes mix; one that fails is listed
// and skipped), so a negative target explains each image's own prediction.

#include "common/float_tensor.h"
#include "common/progress.h"
#include "graph/analysis_context.h"
#include "graph/output_kinds.h"
#include "model/model_setup.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace torchscope {

struct ExportManifest;

class Engine;

struct GradCamRequest {
    std::vector<std::string> images;
    std::string layer;
    int64_t targetClass = -1; // -1: each image's predicted class (or its top detection)
    std::optional<std::array<int64_t, 4>> region; // segmentation: x0, y0, x1, y1 in model-input pixels
    ModelSetup setup; // preprocessing, the scores element and the labels
};

struct GradCamImage {
    std::string image;
    int64_t target = 0;
    std::string targetDescription; // "class 15 (person) summed over its 2,304 pixels"
    std::string note; // why the Grad-CAM map is empty, when that is known
    FloatTensor picture; // [H, W, 3] in [0, 1]: the input as the model saw it
    FloatTensor gradCamAtLayer; // [h, w]: ReLU(sum_c w_c A_c) at the layer's resolution
    FloatTensor gradCam; // [H, W]: the same, bilinear to the input's size
    FloatTensor saliency; // [H, W]: max over input channels of |d score / d input|
    std::pair<double, double> gradCamRange; // min, max of gradCam
    std::pair<double, double> saliencyRange;
};

struct GradCamResult {
    std::string layer;
    OutputKind outputKind = OutputKind::Other;
    std::vector<GradCamImage> images; // in request order, without the failed ones
    std::vector<std::pair<std::string, std::string>> failures; // image, why
    bool cancelled = false; // the images done before the cancel are kept
};

// Throws torchscope::Error when the request itself is wrong (no images, an unknown layer).
GradCamResult computeGradCam(Engine& engine, const GradCamRequest& request, const ProgressCallback& progress = {});

// The analysis "gradcam" (analysis/analysis_table.h): computeGradCam on the context's model.
struct GradCamAnalysis {
    using Request = GradCamRequest;
    using Result = GradCamResult;
    static constexpr const char* name = "gradcam";
    static Result run(AnalysisContext& context, const Request& request);
};

// The maps as one file (.pt, .npz or .safetensors): "gradcam" [N, H, W], "gradcam_layer"
// [N, h, w], "saliency" [N, H, W] and "target" [N] (int64), images in result order. Maps of
// different sizes cannot stack: then each image's maps are written as "KEY/i". Returns the keys
// the format left out. A manifest is written beside (its keys: each map's kind and the layer).
std::vector<std::string> writeGradCam(
    const std::string& path, const GradCamResult& result, const ExportManifest* manifest = nullptr);

} // namespace torchscope
