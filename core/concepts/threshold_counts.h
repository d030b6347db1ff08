#pragma once

// IoU's tally without the upsampled maps. NetDissect upsamples each unit's map to the image's size
// (bilinear) and counts, per concept, the pixels above the unit's threshold: 50,176 values per unit
// and image at 224 × 224, for 2,048 units of a ResNet-50 layer4 and every image of the set. A
// bilinear map is, between four neighbouring samples, a convex combination of them: where all four
// are below the threshold no pixel passes, where all four are above every pixel does (the pixels of
// each label in that rectangle come from summed-area tables in four reads), and only in the few
// cells the threshold crosses is a row's passing run found, by bisection, since along a row a
// bilinear map is monotone between two samples.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace torchscope {

// How a map of `in` samples along one axis is resampled to `out` pixels with align_corners=false (as
// at::upsample_bilinear2d and PIL's resize do): pixel o reads samples first[o] and second[o] (the same
// one at the far edge), the second with weight[o] in [0, 1]. Pixels that read the same two samples
// form a band: bands[b] .. bands[b + 1] - 1 (the last entry is `out`); the weight rises within a band.
struct BilinearAxis {
    BilinearAxis(int64_t in, int64_t out);
    std::vector<int64_t> first, second;
    std::vector<double> weight;
    std::vector<int64_t> bands;
};

// An image's pixels by label (each pixel carries one of `count` labels) as summed-area tables: the
// pixels of every label in a rectangle in four reads each. The tables take count × (height + 1) ×
// (width + 1) 32-bit integers: tableBytes() says how many bytes before they are made.
class LabelTables {
public:
    // labels: [height * width] int64 in [0, count), row-major.
    LabelTables(const at::Tensor& labels, int64_t height, int64_t width, int64_t count);
    static int64_t tableBytes(int64_t height, int64_t width, int64_t count);
    int64_t height() const { return height_; }
    int64_t width() const { return width_; }
    int64_t count() const { return count_; }
    // Adds each label's pixels in rows [y0, y1) and columns [x0, x1) to out[0 .. count).
    void addRectangle(int64_t y0, int64_t y1, int64_t x0, int64_t x1, int64_t* out) const;

private:
    int64_t height_ = 0, width_ = 0, count_ = 0;
    std::vector<int32_t> sums_; // [count][height + 1][width + 1]
};

// For each of `units` (indices into maps' first dimension): its map of maps [U, h, w] (float)
// upsampled bilinearly to the tables' size, the pixels whose value exceeds thresholds[unit], counted
// per label: [units.size(), count] int64. A pixel's value is (1 − wx)((1 − wy)a + wy·c) +
// wx((1 − wy)b + wy·d) in double over its four samples; pixels within rounding of the threshold may
// fall either way, as they do between at::upsample_bilinear2d and PIL. Units run in parallel.
at::Tensor countAboveThresholds(
    const at::Tensor& maps, const at::Tensor& thresholds, const std::vector<int64_t>& units, const LabelTables& tables);

// The same counts from the upsampled maps themselves (at::upsample_bilinear2d, in chunks of units of
// at most 128 MiB): for images whose tables would be too large, and as the tests' reference.
// labels: [height * width] int64 in [0, count).
at::Tensor countAboveThresholdsUpsampled(const at::Tensor& maps, const at::Tensor& thresholds,
    const std::vector<int64_t>& units, const at::Tensor& labels, int64_t height, int64_t width, int64_t count);

} // namespace torchscope
