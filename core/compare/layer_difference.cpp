#include "compare/layer_difference.h"

#include "common/error.h"
#include "common/strings.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

namespace torchscope {

DifferenceAccumulator::DifferenceAccumulator(std::string layer)
{
    difference_.layer = std::move(layer);
}

void DifferenceAccumulator::add(const at::Tensor& reference, const at::Tensor& other)
{
    if (reference.sizes() != other.sizes())
        throw Error("layer " + difference_.layer + " has shape " + shapeToString(reference.sizes().vec())
            + " in one run and " + shapeToString(other.sizes().vec())
            + " in the other; per-layer differences need the same shapes (compare them with CKA instead)");
    if (reference.dim() < 1 || reference.size(0) == 0)
        return;
    const at::Tensor a = reference.detach().to(at::kCPU, at::kDouble).reshape({reference.size(0), -1});
    const at::Tensor b = other.detach().to(at::kCPU, at::kDouble).reshape({other.size(0), -1});
    if (difference_.shape.empty()) {
        const auto sizes = reference.sizes().vec();
        difference_.shape.assign(sizes.begin() + 1, sizes.end());
    }
    const at::Tensor diff = b - a;
    squaredReference_ += (a * a).sum().item<double>();
    squaredDifference_ += (diff * diff).sum().item<double>();
    // NaN wins (std::max would drop it): a run that produced NaN must not look close.
    auto largest
        = [](double kept, double value) { return std::isnan(kept) || std::isnan(value) ? NAN : std::max(kept, value); };
    difference_.maxAbsError = largest(difference_.maxAbsError, diff.abs().max().item<double>());
    maxAbsReference_ = largest(maxAbsReference_, a.abs().max().item<double>());
    // Per sample: cos(a_i, b_i); two zero vectors are the same (1), one zero vector is not (0).
    const at::Tensor normA = a.norm(2, 1), normB = b.norm(2, 1);
    const at::Tensor dots = (a * b).sum(1);
    const at::Tensor bothZero = (normA == 0) & (normB == 0);
    const at::Tensor cosine = at::where(bothZero, at::ones_like(dots), dots / (normA * normB).clamp_min(1e-300));
    cosineSum_ += cosine.sum().item<double>();
    samples_ += a.size(0);
}

LayerDifference DifferenceAccumulator::result() const
{
    LayerDifference d = difference_;
    const double inf = std::numeric_limits<double>::infinity();
    d.cosine = samples_ > 0 ? cosineSum_ / static_cast<double>(samples_) : std::numeric_limits<double>::quiet_NaN();
    d.relativeL2 = squaredReference_ > 0 ? std::sqrt(squaredDifference_ / squaredReference_)
                                         : (squaredDifference_ > 0 ? inf : 0.0);
    d.maxRelativeError = maxAbsReference_ > 0 ? d.maxAbsError / maxAbsReference_ : (d.maxAbsError > 0 ? inf : 0.0);
    return d;
}

} // namespace torchscope
