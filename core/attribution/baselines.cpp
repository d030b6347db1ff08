#include "attribution/baselines.h"

#include "common/error.h"
#include "common/strings.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace torchscope {

BaselineKind parseBaselineKind(const std::string& name)
{
    if (name.empty())
        throw Error("a baseline is black, blur, noise or an image file; got nothing");
    if (name == "black")
        return BaselineKind::Black;
    if (name == "blur")
        return BaselineKind::Blur;
    if (name == "noise")
        return BaselineKind::Noise;
    return BaselineKind::Image;
}

std::string baselineName(const Baseline& baseline)
{
    switch (baseline.kind) {
    case BaselineKind::Black:
        return "black";
    case BaselineKind::Blur:
        return "blur";
    case BaselineKind::Noise:
        return "noise";
    case BaselineKind::Image:
        return "image";
    }
    return "black";
}

double defaultBlurSigma(int64_t height, int64_t width)
{
    return std::max(1.0, static_cast<double>(std::min(height, width)) / 10.0);
}

int64_t blurKernelSize(double sigma, int64_t height, int64_t width)
{
    const auto half = std::min<int64_t>(static_cast<int64_t>(std::ceil(3.0 * sigma)), std::min(height, width) - 1);
    return 2 * std::max<int64_t>(0, half) + 1;
}

at::Tensor gaussianBlur(const at::Tensor& images, double sigma)
{
    if (images.dim() != 4 || !(sigma > 0.0))
        throw Error("blurring needs images [N, C, H, W] and a sigma > 0, got " + shapeToString(images.sizes().vec())
            + " and " + std::to_string(sigma));
    const int64_t size = blurKernelSize(sigma, images.size(2), images.size(3));
    const auto options = images.options().dtype(at::kFloat);
    const double half = (size - 1) * 0.5;
    const at::Tensor x = at::linspace(-half, half, size, options);
    const at::Tensor pdf = at::exp(-0.5 * (x / sigma).pow(2));
    const at::Tensor kernel1d = pdf / pdf.sum();
    const at::Tensor kernel2d = at::mm(kernel1d.unsqueeze(1), kernel1d.unsqueeze(0));
    const int64_t channels = images.size(1);
    const at::Tensor weight = kernel2d.expand({channels, 1, size, size});
    const int64_t pad = size / 2;
    const at::Tensor padded = at::reflection_pad2d(images.to(at::kFloat), {pad, pad, pad, pad});
    const std::vector<int64_t> one{1, 1}, none{0, 0};
    return at::conv2d(padded, weight, at::Tensor(), one, none, one, channels);
}

at::Tensor uniformNoise(const at::Tensor& x, uint64_t seed)
{
    at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(seed);
    const at::Tensor cpu = x.to(at::kFloat).cpu();
    const at::Tensor low = cpu.min(), high = cpu.max();
    const at::Tensor unit = at::rand(cpu.sizes(), generator, at::TensorOptions().dtype(at::kFloat));
    return (low + unit * (high - low)).to(x.device());
}

at::Tensor baselineOf(const Baseline& baseline, const at::Tensor& x, int64_t index)
{
    switch (baseline.kind) {
    case BaselineKind::Black:
        return at::zeros_like(x);
    case BaselineKind::Blur:
        return gaussianBlur(x, baseline.blurSigma > 0.0 ? baseline.blurSigma : defaultBlurSigma(x.size(2), x.size(3)));
    case BaselineKind::Noise:
        return uniformNoise(x, baseline.seed + static_cast<uint64_t>(index));
    case BaselineKind::Image:
        break;
    }
    const at::Tensor& images = baseline.images;
    if (!images.defined() || images.dim() != 4 || !images.sizes().slice(1).equals(x.sizes().slice(1))
        || (images.size(0) != 1 && images.size(0) <= index))
        throw Error("the baseline image must have the inputs' shape " + shapeToString(x.sizes().vec())
            + " (one for all, or one per input); it is "
            + (images.defined() ? shapeToString(images.sizes().vec()) : std::string("missing")));
    return images.narrow(0, images.size(0) == 1 ? 0 : index, 1).to(x.options());
}

} // namespace torchscope
