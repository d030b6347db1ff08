#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace torchscope {

class Engine;

struct Attribution {
    std::vector<int64_t> targets; // the class explained, per image
    at::Tensor logits; // [N, classes]
    at::Tensor gradCam; // [N, h, w] at the layer's resolution: ReLU(sum_c w_c * A_c), not normalised
    at::Tensor gradCamUpsampled; // [N, H, W]: bilinear to the input's size
    at::Tensor saliency; // [N, H, W]: max over input channels of |d score / d input|
};

// Grad-CAM (Selvaraju et al.) for `layer`: the gradient of the target class score with respect
// to the layer's output, averaged over positions as channel weights, the weighted sum of the
// channels, ReLU. Plus the plain input gradient (saliency). `targetClass` < 0 explains each
// image's own predicted class. The model must return [batch, classes] scores and the layer a
// [batch, C, h, w] map. Throws torchscope::Error.
Attribution computeAttribution(
    Engine& engine, const at::Tensor& images, const std::string& layer, int64_t targetClass = -1);

// Scales a map to [0, 1] (a constant map becomes 0).
at::Tensor normalizeMap(const at::Tensor& map);

} // namespace torchscope
