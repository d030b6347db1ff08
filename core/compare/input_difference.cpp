#include "compare/input_difference.h"

#include "common/error.h"
#include "common/strings.h"
#include "common/tensor_conversion.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace torchscope {
namespace {

at::Tensor oneSample(const at::Tensor& value)
{
    at::Tensor v = value.detach().to(at::kCPU, at::kFloat);
    if (v.dim() >= 2 && v.size(0) == 1)
        v = v[0];
    return v.contiguous();
}

} // namespace

InputDifference compareInputs(const at::Tensor& a, const at::Tensor& b)
{
    const at::Tensor x = oneSample(a), y = oneSample(b);
    if (x.sizes() != y.sizes())
        throw Error("the layer's outputs for A and B differ in shape: " + shapeToString(x.sizes().vec()) + " and "
            + shapeToString(y.sizes().vec()) + " (images of different sizes?)");
    if (x.numel() == 0)
        throw Error("the layer's output is empty");
    const at::Tensor d = x - y;
    InputDifference out;
    out.a = toFloatTensor(x);
    out.b = toFloatTensor(y);
    out.difference = toFloatTensor(d);
    out.low = std::min(x.min().item<float>(), y.min().item<float>());
    out.high = std::max(x.max().item<float>(), y.max().item<float>());
    out.largest = d.abs().max().item<float>();
    const at::Tensor perChannel = x.dim() >= 1 ? d.abs().reshape({x.size(0), -1}).to(at::kDouble).mean(1) : d.abs();
    out.channelDifference = toDoubles(perChannel);
    out.ranked.resize(out.channelDifference.size());
    std::iota(out.ranked.begin(), out.ranked.end(), 0);
    // NaN first (the channels most worth a look), then by size; a strict weak order either way.
    std::stable_sort(out.ranked.begin(), out.ranked.end(), [&](int64_t i, int64_t j) {
        const double x = out.channelDifference[static_cast<size_t>(i)],
                     y = out.channelDifference[static_cast<size_t>(j)];
        if (std::isnan(x) || std::isnan(y))
            return std::isnan(x) && !std::isnan(y);
        return x > y;
    });
    return out;
}

FloatTensor InputDifference::rankedChannels(const FloatTensor& maps, const std::vector<int64_t>& ranked, size_t count)
{
    FloatTensor out;
    if (maps.shape.empty())
        return out;
    const size_t channels = static_cast<size_t>(maps.shape[0]);
    const size_t size = channels > 0 ? maps.values.size() / channels : 0;
    const size_t n = std::min(count, ranked.size());
    out.shape = maps.shape;
    out.shape[0] = static_cast<int64_t>(n);
    out.values.reserve(n * size);
    for (size_t i = 0; i < n; ++i) {
        const auto begin = maps.values.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(ranked[i]) * size);
        out.values.insert(out.values.end(), begin, begin + static_cast<std::ptrdiff_t>(size));
    }
    return out;
}

} // namespace torchscope
