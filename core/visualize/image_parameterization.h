#pragma once

#include "visualize/visualization.h"

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>

namespace torchscope {

class SeededRandom;

// The optimised images' parameters (what Adam changes) and the way from them to pixels, as in
// Lucid and Lucent: a spectrum scaled by 1/max(f, 1/side) and inverse-FFT'd (orthonormal) then
// divided by 4, or plain pixels; starting values normal with standard deviation 0.01; colours
// decorrelated with ImageNet's square-root colour covariance; a sigmoid to [0, 1].
class ParameterizedImage {
public:
    ParameterizedImage(Parameterization parameterization, int64_t images, int64_t channels, int64_t height,
        int64_t width, bool decorrelate, SeededRandom& random, c10::Device device);

    at::Tensor& parameters() { return parameters_; }
    at::Tensor pixels() const; // [N, C, H, W] in [0, 1], differentiable in the parameters

private:
    Parameterization parameterization_;
    int64_t height_, width_;
    bool decorrelate_;
    at::Tensor parameters_;
    at::Tensor spectrumScale_; // Fft: [H, W/2+1, 1]
    at::Tensor colourMatrix_; // [3, 3], applied as pixels @ M^T
};

} // namespace torchscope
