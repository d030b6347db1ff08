#pragma once

// Where Integrated Gradients' path starts (and what deletion / insertion fill in): black (zeros
// after preprocessing), the input blurred, uniform noise over the input's range, or a user's image.
// Random baselines come from a CPU generator seeded per image, so that a seed gives the same
// baseline on every device and `torch.rand(..., generator=torch.Generator().manual_seed(s))`
// reproduces it.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>

namespace torchscope {

enum class BaselineKind { Black, Blur, Noise, Image };

struct Baseline {
    BaselineKind kind = BaselineKind::Black;
    at::Tensor images; // Image: [1 or N, C, H, W], preprocessed as the inputs
    double blurSigma = 0.0; // Blur: in pixels; 0: defaultBlurSigma
    uint64_t seed = 0; // Noise: image i draws with seed + i
};

// "black", "blur", "noise"; anything else is a file, loaded by the caller. Throws for "".
BaselineKind parseBaselineKind(const std::string& name);
std::string baselineName(const Baseline& baseline);

// The baseline of image `index` of a batch, x: [1, C, H, W]. Throws torchscope::Error when a
// user's image has another shape or count.
at::Tensor baselineOf(const Baseline& baseline, const at::Tensor& x, int64_t index);

// torchvision.transforms.functional.gaussian_blur with sigma on both axes and the kernel size
// 2 * ceil(3 sigma) + 1 (at most what reflection padding allows): a normalised Gaussian kernel, the
// border reflected, one depthwise convolution.
at::Tensor gaussianBlur(const at::Tensor& images, double sigma);
int64_t blurKernelSize(double sigma, int64_t height, int64_t width);
double defaultBlurSigma(int64_t height, int64_t width); // a tenth of the shorter side

// Uniform noise over [x.min(), x.max()] of x's shape, from a CPU generator seeded `seed`.
at::Tensor uniformNoise(const at::Tensor& x, uint64_t seed);

} // namespace torchscope
