#pragma once

#include "graph/model_output.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace torchscope {

class Engine;

struct Attribution {
    std::vector<int64_t> targets; // the class (or detection) explained, per image
    std::vector<std::string> descriptions; // "class 3", "class 15 summed over its 2,304 pixels", ...
    OutputKind kind = OutputKind::Other; // of the model's output
    at::Tensor logits; // [N, classes] when the model returns class scores, else undefined
    at::Tensor gradCam; // [N, h, w] at the layer's resolution: ReLU(sum_c w_c * A_c), not normalised
    at::Tensor gradCamUpsampled; // [N, H, W]: bilinear to the input's size
    at::Tensor saliency; // [N, H, W]: max over input channels of |d score / d input|
    // Why a map is empty when the reason is known (the score's gradient is zero on every position
    // of the layer: past ViT's last block only the class token reaches the score), per image.
    std::vector<std::string> notes;
};

// Grad-CAM (Selvaraju et al.) for `layer`: the gradient of the target score (graph/model_output.h:
// a class, a segmentation class over its pixels or a region, a detection) with respect to the
// layer's output, averaged over positions as channel weights, the weighted sum of the channels,
// ReLU. Plus the plain input gradient (saliency). A negative target index explains each image's
// own prediction. The layer gives [batch, C, h, w] maps, or vision transformer tokens
// [batch, T, D] whose patches form the image's grid (tokensAsMaps). Throws
// torchscope::Error.
Attribution computeAttribution(Engine& engine, const at::Tensor& images, const std::string& layer,
    const GradientTarget& target = {}, const std::string& scoresElement = "",
    const std::vector<std::string>& labels = {});

// [N, T, D] tokens of a vision transformer as [N, D, h, w] maps of their patches (after the class and
// register tokens); an undefined tensor when no grid fits. On an image of `height` x `width` (the
// model's input; 0 when not known: a square image) the grid has the image's proportions: h x w = T - k
// with h : w = height : width, k the fewest tokens before the patches that make it fit.
at::Tensor tokensAsMaps(const at::Tensor& tokens, int64_t height = 0, int64_t width = 0);

// Why a layer's output is no map for `what` (a CAM): not [N, C, h, w], or tokens no grid fits.
std::string describeNoGrid(
    const at::Tensor& value, const std::string& layer, int64_t height, int64_t width, const std::string& what);

// Scales a map to [0, 1] (a constant map becomes 0).
at::Tensor normalizeMap(const at::Tensor& map);

} // namespace torchscope
