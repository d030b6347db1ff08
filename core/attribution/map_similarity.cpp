#include "attribution/map_similarity.h"

#include "common/error.h"
#include "common/strings.h"

#include <ATen/ATen.h>

#include <limits>

namespace torchscope {
namespace {

// Ranks 1..n with ties sharing their average rank.
at::Tensor averageRanks(const at::Tensor& values)
{
    const at::Tensor flat = values.reshape({-1}).to(at::kDouble).cpu().contiguous();
    const auto [sorted, order] = flat.sort(/*stable=*/true, /*dim=*/0, /*descending=*/false);
    const int64_t n = flat.numel();
    at::Tensor ranks = at::empty({n}, at::kDouble);
    const auto* v = sorted.data_ptr<double>();
    const auto* o = order.data_ptr<int64_t>();
    auto* r = ranks.data_ptr<double>();
    for (int64_t first = 0; first < n;) {
        int64_t last = first;
        while (last + 1 < n && v[last + 1] == v[first])
            ++last;
        const double average = 0.5 * static_cast<double>(first + last) + 1.0;
        for (int64_t k = first; k <= last; ++k)
            r[o[k]] = average;
        first = last + 1;
    }
    return ranks;
}

} // namespace

double spearmanCorrelation(const at::Tensor& a, const at::Tensor& b)
{
    if (a.numel() != b.numel() || a.numel() < 2)
        throw Error("a rank correlation needs two maps of one size, got " + shapeToString(a.sizes().vec()) + " and "
            + shapeToString(b.sizes().vec()));
    const at::Tensor x = averageRanks(a), y = averageRanks(b);
    const at::Tensor dx = x - x.mean(), dy = y - y.mean();
    const double denominator = std::sqrt((dx * dx).sum().item<double>() * (dy * dy).sum().item<double>());
    if (denominator == 0.0)
        return std::numeric_limits<double>::quiet_NaN();
    return (dx * dy).sum().item<double>() / denominator;
}

double structuralSimilarity(const at::Tensor& a, const at::Tensor& b)
{
    constexpr int64_t window = 7;
    if (a.dim() != 2 || !a.sizes().equals(b.sizes()) || a.size(0) < window || a.size(1) < window)
        throw Error("SSIM compares two 2-D maps of one size, each side at least 7, got "
            + shapeToString(a.sizes().vec()) + " and " + shapeToString(b.sizes().vec()));
    const at::Tensor x = a.to(at::kDouble).cpu(), y = b.to(at::kDouble).cpu();
    const double range = std::max(x.max().item<double>(), y.max().item<double>())
        - std::min(x.min().item<double>(), y.min().item<double>());
    const auto mean = [&](const at::Tensor& t) {
        return at::avg_pool2d(t.view({1, 1, t.size(0), t.size(1)}), {window, window}, {1, 1});
    };
    const double samples = window * window, covarianceNorm = samples / (samples - 1.0);
    const at::Tensor ux = mean(x), uy = mean(y);
    const at::Tensor vx = covarianceNorm * (mean(x * x) - ux * ux);
    const at::Tensor vy = covarianceNorm * (mean(y * y) - uy * uy);
    const at::Tensor vxy = covarianceNorm * (mean(x * y) - ux * uy);
    const double c1 = (0.01 * range) * (0.01 * range), c2 = (0.03 * range) * (0.03 * range);
    const at::Tensor s = ((2 * ux * uy + c1) * (2 * vxy + c2)) / ((ux * ux + uy * uy + c1) * (vx + vy + c2));
    return s.mean().item<double>();
}

} // namespace torchscope
