#include "attribution/smooth_gradients.h"

#include "common/error.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <string>

namespace torchscope {

at::Tensor SmoothGradients::variance() const
{
    return meanOfSquares - mean * mean;
}

SmoothGradients smoothGradients(Engine& engine, const at::Tensor& x, int64_t index, const ScoreSource& source,
    int64_t target, const NoiseSettings& settings, int64_t batch)
{
    if (settings.samples < 1 || !(settings.noise >= 0.0))
        throw Error("SmoothGrad needs --samples >= 1 and --noise >= 0, got " + std::to_string(settings.samples)
            + " and " + std::to_string(settings.noise));
    const int64_t samples = settings.samples;
    const at::Tensor cpu = x.to(at::kFloat).cpu();
    const double sigma = settings.noise * (cpu.max() - cpu.min()).item<double>();
    // Captum: torch.normal(0, torch.tensor(stdev).repeat(size)), float32, every sample in one draw.
    at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(settings.seed + static_cast<uint64_t>(index));
    std::vector<int64_t> shape = cpu.sizes().vec();
    shape[0] = samples;
    const at::Tensor sigmas = at::full(shape, static_cast<float>(sigma), at::kFloat);
    const at::Tensor noisy = (cpu.expand(shape) + at::normal(0.0, sigmas, generator)).to(x.device());

    at::Tensor sum = at::zeros_like(x, at::kFloat), sumOfSquares = at::zeros_like(x, at::kFloat);
    for (int64_t first = 0; first < samples; first += batch) {
        const int64_t count = std::min(batch, samples - first);
        const at::Tensor gradients = inputGradients(engine, noisy.narrow(0, first, count), source, target).input;
        sum += gradients.sum(0, true);
        sumOfSquares += gradients.pow(2).sum(0, true);
    }
    return {sum / static_cast<double>(samples), sumOfSquares / static_cast<double>(samples)};
}

} // namespace torchscope
