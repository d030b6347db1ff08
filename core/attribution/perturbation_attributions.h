#pragma once

// Attributions that perturb the input and watch the score drop, with no gradient: Occlusion
// (Zeiler and Fergus 2014, as Captum's Occlusion) and Score-CAM (Wang et al. 2020, as
// pytorch-grad-cam). The perturbed inputs are evaluated `batch` at a time.

#include "attribution/model_scores.h"

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace torchscope {

class Engine;

// One image [1, C, H, W]: a window x window square over all channels, moved by stride, filled
// with 0; each value gets the mean score drop of the windows that covered it. Windows at the
// right and bottom edge may reach past it (Captum's count). Throws torchscope::Error for a window
// or stride that does not fit.
at::Tensor occlusion(Engine& engine, const at::Tensor& x, const ScoreSource& source, int64_t target, int64_t window,
    int64_t stride, int64_t batch);

// One image [1, C, H, W] and its layer's activations [1, K, h, w]: each channel, upsampled to the
// input (bilinear, corners aligned) and scaled to [0, 1], masks the input; the softmax over
// channels of the masked inputs' target scores weighs the channels. [1, 1, h, w], ReLU'd.
at::Tensor scoreCam(Engine& engine, const at::Tensor& x, const at::Tensor& activations, const ScoreSource& source,
    int64_t target, int64_t batch);

} // namespace torchscope
