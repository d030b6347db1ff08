#include "concepts/threshold_counts.h"

#include "common/error.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>

namespace torchscope {

namespace {

constexpr int64_t MaxUpsampledValues = int64_t{1} << 25; // per chunk of units: 128 MiB of floats

} // namespace

BilinearAxis::BilinearAxis(int64_t in, int64_t out)
{
    if (in < 1 || out < 1)
        throw Error("a bilinear resampling from " + std::to_string(in) + " to " + std::to_string(out)
            + " samples: both must be at least 1");
    const double scale = static_cast<double>(in) / static_cast<double>(out);
    first.resize(static_cast<size_t>(out));
    second.resize(static_cast<size_t>(out));
    weight.resize(static_cast<size_t>(out));
    for (int64_t o = 0; o < out; ++o) {
        const double source = std::max(0.0, (static_cast<double>(o) + 0.5) * scale - 0.5);
        const int64_t low = std::min(static_cast<int64_t>(source), in - 1);
        const auto i = static_cast<size_t>(o);
        first[i] = low;
        second[i] = low < in - 1 ? low + 1 : low;
        weight[i] = std::min(1.0, source - static_cast<double>(low));
        if (o == 0 || first[i] != first[i - 1])
            bands.push_back(o);
    }
    bands.push_back(out);
}

int64_t LabelTables::tableBytes(int64_t height, int64_t width, int64_t count)
{
    return count * (height + 1) * (width + 1) * static_cast<int64_t>(sizeof(int32_t));
}

LabelTables::LabelTables(const at::Tensor& labels, int64_t height, int64_t width, int64_t count)
    : height_(height)
    , width_(width)
    , count_(count)
{
    if (labels.numel() != height * width)
        throw Error("labels for " + std::to_string(height) + " × " + std::to_string(width) + " pixels: got "
            + std::to_string(labels.numel()));
    const at::Tensor flat = labels.to(at::kLong).contiguous();
    const int64_t* label = flat.data_ptr<int64_t>();
    for (int64_t i = 0; i < height * width; ++i)
        if (label[i] < 0 || label[i] >= count)
            throw Error("a pixel's label " + std::to_string(label[i]) + " is not below " + std::to_string(count));
    const int64_t stride = width + 1, plane = (height + 1) * stride;
    sums_.assign(static_cast<size_t>(count * plane), 0);
    for (int64_t y = 0; y < height; ++y) {
        for (int64_t c = 0; c < count; ++c) {
            int32_t* above = sums_.data() + c * plane + y * stride;
            int32_t* row = above + stride;
            int32_t run = 0;
            for (int64_t x = 0; x < width; ++x) {
                run += label[y * width + x] == c ? 1 : 0;
                row[x + 1] = above[x + 1] + run;
            }
        }
    }
}

void LabelTables::addRectangle(int64_t y0, int64_t y1, int64_t x0, int64_t x1, int64_t* out) const
{
    if (y0 >= y1 || x0 >= x1)
        return;
    const int64_t stride = width_ + 1, plane = (height_ + 1) * stride;
    for (int64_t c = 0; c < count_; ++c) {
        const int32_t* s = sums_.data() + c * plane;
        out[c] += s[y1 * stride + x1] - s[y0 * stride + x1] - s[y1 * stride + x0] + s[y0 * stride + x0];
    }
}

at::Tensor countAboveThresholds(
    const at::Tensor& maps, const at::Tensor& thresholds, const std::vector<int64_t>& units, const LabelTables& tables)
{
    const at::Tensor values = maps.to(at::kFloat).contiguous();
    const at::Tensor limits = thresholds.to(at::kFloat).contiguous();
    const int64_t h = values.size(1), w = values.size(2);
    const BilinearAxis rows(h, tables.height()), columns(w, tables.width());
    at::Tensor counts = at::zeros({static_cast<int64_t>(units.size()), tables.count()}, at::kLong);
    int64_t* countData = counts.data_ptr<int64_t>();
    const float* valueData = values.data_ptr<float>();
    const float* limitData = limits.data_ptr<float>();
    at::parallel_for(0, static_cast<int64_t>(units.size()), 8, [&](int64_t begin, int64_t end) {
        for (int64_t k = begin; k < end; ++k) {
            const int64_t unit = units[static_cast<size_t>(k)];
            const float* map = valueData + unit * h * w;
            const double t = limitData[unit];
            int64_t* out = countData + k * tables.count();
            for (size_t rb = 0; rb + 1 < rows.bands.size(); ++rb) {
                const int64_t y0 = rows.bands[rb], y1 = rows.bands[rb + 1];
                const int64_t top = rows.first[static_cast<size_t>(y0)], bottom = rows.second[static_cast<size_t>(y0)];
                for (size_t cb = 0; cb + 1 < columns.bands.size(); ++cb) {
                    const int64_t x0 = columns.bands[cb], x1 = columns.bands[cb + 1];
                    const int64_t left = columns.first[static_cast<size_t>(x0)];
                    const int64_t right = columns.second[static_cast<size_t>(x0)];
                    const double a = map[top * w + left], b = map[top * w + right];
                    const double c = map[bottom * w + left], d = map[bottom * w + right];
                    const double low = std::min({a, b, c, d}), high = std::max({a, b, c, d});
                    if (high < t) // every pixel a convex combination of the four: below
                        continue;
                    if (low > t) {
                        tables.addRectangle(y0, y1, x0, x1, out);
                        continue;
                    }
                    for (int64_t y = y0; y < y1; ++y) {
                        const double wy = rows.weight[static_cast<size_t>(y)];
                        const double v0 = (1.0 - wy) * a + wy * c, v1 = (1.0 - wy) * b + wy * d;
                        const auto passes = [&](int64_t x) {
                            const double wx = columns.weight[static_cast<size_t>(x)];
                            return (1.0 - wx) * v0 + wx * v1 > t;
                        };
                        // Along the row the value moves monotonically from v0 towards v1: the pixels
                        // that pass are a run at the end that rises (or the start that falls).
                        const bool rising = v1 >= v0;
                        int64_t lo = x0, hi = x1; // the first pixel where passes(x) == rising
                        while (lo < hi) {
                            const int64_t mid = lo + (hi - lo) / 2;
                            if (passes(mid) == rising)
                                hi = mid;
                            else
                                lo = mid + 1;
                        }
                        if (rising)
                            tables.addRectangle(y, y + 1, lo, x1, out);
                        else
                            tables.addRectangle(y, y + 1, x0, lo, out);
                    }
                }
            }
        }
    });
    return counts;
}

at::Tensor countAboveThresholdsUpsampled(const at::Tensor& maps, const at::Tensor& thresholds,
    const std::vector<int64_t>& units, const at::Tensor& labels, int64_t height, int64_t width, int64_t count)
{
    at::Tensor counts = at::zeros({static_cast<int64_t>(units.size()), count}, at::kLong);
    if (units.empty())
        return counts;
    const at::Tensor oneHot
        = at::zeros({height * width, count}).scatter_(1, labels.to(at::kLong).reshape({-1, 1}), 1.0f);
    const at::Tensor chosen = at::tensor(units, at::kLong);
    const int64_t chunk = std::max<int64_t>(1, MaxUpsampledValues / std::max<int64_t>(height * width, 1));
    for (int64_t start = 0; start < chosen.numel(); start += chunk) {
        const int64_t n = std::min(chunk, chosen.numel() - start);
        const at::Tensor some = chosen.narrow(0, start, n);
        const at::Tensor upsampled = at::upsample_bilinear2d(
            maps.to(at::kFloat).index_select(0, some).unsqueeze(0), {height, width}, false)[0];
        const at::Tensor active
            = upsampled.flatten(1).gt(thresholds.to(at::kFloat).index_select(0, some).unsqueeze(1)).to(at::kFloat);
        counts.narrow(0, start, n).copy_(active.mm(oneHot).round().to(at::kLong)); // exact below 2^24 pixels
    }
    return counts;
}

} // namespace torchscope
