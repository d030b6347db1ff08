#include "attribution/road_imputation.h"

#include "common/error.h"
#include "common/strings.h"

#include <ATen/ATen.h>

#include <cmath>

namespace torchscope {
namespace {

// The neighbours' weights as one 3 x 3 kernel (the centre unused).
at::Tensor neighbourKernel()
{
    const double side = 1.0 / 6.0, corner = 1.0 / 12.0;
    return at::tensor({corner, side, corner, side, 0.0, side, corner, side, corner}, at::kDouble).view({1, 1, 3, 3});
}

// Sum over each pixel's in-bounds neighbours of weight × value, for every channel.
at::Tensor neighbourSum(const at::Tensor& grid, const at::Tensor& kernel)
{
    const int64_t channels = grid.size(0);
    const std::vector<int64_t> one{1, 1};
    return at::conv2d(grid.unsqueeze(0), kernel.expand({channels, 1, 3, 3}), at::Tensor(), one, one, one, channels)
        .squeeze(0);
}

} // namespace

std::vector<double> roadPercentiles()
{
    return {10, 20, 30, 40, 50, 60, 70, 80, 90};
}

double percentile(const at::Tensor& values, double q)
{
    const at::Tensor sorted = std::get<0>(values.reshape({-1}).to(at::kDouble).cpu().sort());
    const int64_t n = sorted.numel();
    if (n == 0)
        throw Error("a percentile of no values");
    const double index = q / 100.0 * static_cast<double>(n - 1);
    const auto below = static_cast<int64_t>(std::floor(index));
    const int64_t above = std::min(below + 1, n - 1);
    const double t = index - static_cast<double>(below);
    const double a = sorted[below].item<double>(), b = sorted[above].item<double>();
    // numpy's _lerp: from the nearer end, so that t = 1 gives b exactly
    return t >= 0.5 ? b - (b - a) * (1.0 - t) : a + (b - a) * t;
}

at::Tensor roadKeepMask(const at::Tensor& importance, double q, bool mostRelevantFirst)
{
    const at::Tensor mask = mostRelevantFirst ? importance.to(at::kFloat) : 1 - importance.to(at::kFloat);
    return mask.lt(percentile(mask, q));
}

at::Tensor noisyLinearImputation(
    const at::Tensor& image, const at::Tensor& keep, double noise, at::Generator& generator)
{
    if (image.dim() != 3 || keep.dim() != 2 || image.size(1) != keep.size(0) || image.size(2) != keep.size(1))
        throw Error("imputation needs an image [C, H, W] and a mask [H, W], got " + shapeToString(image.sizes().vec())
            + " and " + shapeToString(keep.sizes().vec()));
    const at::Tensor known = keep.to(at::kDouble).cpu(), unknown = 1 - known;
    const at::Tensor x = image.to(at::kDouble).cpu();
    const int64_t channels = x.size(0);
    const at::Tensor kernel = neighbourKernel();
    // (-A) v = diagonal · v - (the unknown neighbours' weighted sum); b = the known neighbours' sum.
    const at::Tensor diagonal = neighbourSum(at::ones({1, x.size(1), x.size(2)}, at::kDouble), kernel);
    const auto apply = [&](const at::Tensor& v) { return (diagonal * v - neighbourSum(v, kernel)) * unknown; };
    const at::Tensor b = neighbourSum(x * known, kernel) * unknown;

    // Conjugate gradients per channel together (each channel its own system, one shared matrix).
    at::Tensor solution = at::zeros_like(b), residual = b.clone(), direction = residual.clone();
    at::Tensor rr = (residual * residual).sum({1, 2}, true);
    const at::Tensor target = (b * b).sum({1, 2}, true) * 1e-24;
    for (int iteration = 0; iteration < 20000; ++iteration) {
        if ((rr <= target).all().item<bool>())
            break;
        const at::Tensor q = apply(direction);
        const at::Tensor alpha = rr / (direction * q).sum({1, 2}, true).clamp_min(1e-300);
        solution += alpha * direction;
        residual -= alpha * q;
        const at::Tensor next = (residual * residual).sum({1, 2}, true);
        direction = residual + (next / rr.clamp_min(1e-300)) * direction;
        rr = next;
    }

    // Python: img_infill[:, indices] = res.t() + noise * torch.randn_like(res.t()), res [n, C] float32.
    // spsolve returns res column-major (SuperLU solves one channel after the other) and torch.tensor
    // keeps those strides, so res.t() is a contiguous [C, n] and the noise is drawn channel by channel:
    // every pixel of channel 0, then channel 1, ... (with one channel the orders agree).
    const at::Tensor indices = at::nonzero(unknown.reshape({-1}).to(at::kBool)).squeeze(1);
    const int64_t n = indices.numel();
    const at::Tensor res = solution.reshape({channels, -1}).index_select(1, indices).t().to(at::kFloat); // [n, C]
    at::Tensor drawn = at::empty({channels, n}, at::kFloat);
    drawn.normal_(0.0, 1.0, generator);
    at::Tensor filled = image.to(at::kFloat).cpu().reshape({channels, -1}).clone();
    filled.index_copy_(1, indices, res.t() + noise * drawn);
    return filled.view_as(image);
}

} // namespace torchscope
