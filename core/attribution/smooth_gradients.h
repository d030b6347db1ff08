#pragma once

// SmoothGrad (Smilkov et al. 2017), SmoothGrad² and VarGrad (Adebayo et al. 2018): the input's
// gradient averaged over noisy copies x + N(0, sigma²), as Captum's NoiseTunnel over
// Saliency(abs=False) computes them. sigma is a fraction of the input's range (max - min). Image i
// draws its noise from a CPU generator seeded seed + i, all samples in one draw as Captum does:
// `torch.manual_seed(seed + i)` before Captum's call on that image draws the same noise.

#include "attribution/model_scores.h"

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace torchscope {

class Engine;

struct NoiseSettings {
    int samples = 25;
    double noise = 0.15; // sigma / (x.max() - x.min())
    uint64_t seed = 0;
};

struct SmoothGradients {
    at::Tensor mean; // SmoothGrad, [1, C, H, W]
    at::Tensor meanOfSquares; // SmoothGrad²
    at::Tensor variance() const; // VarGrad: meanOfSquares - mean²
};

// One image [1, C, H, W], its index in the batch (for the seed); the noisy copies' gradients are
// taken `batch` at a time. Throws torchscope::Error for samples < 1 or noise < 0.
SmoothGradients smoothGradients(Engine& engine, const at::Tensor& x, int64_t index, const ScoreSource& source,
    int64_t target, const NoiseSettings& settings, int64_t batch);

} // namespace torchscope
