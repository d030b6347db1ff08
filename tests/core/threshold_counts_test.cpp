// IoU's tally without upsampled maps (concepts/threshold_counts.h), held to at::upsample_bilinear2d:
// the resampling's geometry reproduces its maps; the counts per label equal those of its maps
// thresholded, but for pixels within rounding of the threshold; on grids and images of several
// shapes (square, H != W, a grid larger than the image, a 1 × 1 grid); the summed-area tables
// against counting the pixels one by one.
#include "common/error.h"
#include "concepts/threshold_counts.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <tuple>

namespace torchscope {
namespace {

// Blocky labels, as masks are: `count` labels in patches of 5 × 3 pixels, shuffled.
at::Tensor blockyLabels(int64_t height, int64_t width, int64_t count)
{
    const at::Tensor patches = at::randint(count, {(height + 4) / 5, (width + 2) / 3}, at::kLong);
    return patches.repeat_interleave(5, 0).repeat_interleave(3, 1).narrow(0, 0, height).narrow(1, 0, width).flatten();
}

using Shape = std::tuple<int64_t, int64_t, int64_t, int64_t>; // grid h, w; image H, W

class ThresholdCountsShapes : public ::testing::TestWithParam<Shape> { };

TEST_P(ThresholdCountsShapes, TheAxesReproduceATensUpsampling)
{
    const auto [h, w, height, width] = GetParam();
    at::manual_seed(1);
    const at::Tensor map = at::randn({h, w}, at::kDouble);
    const at::Tensor expected
        = at::upsample_bilinear2d(map.view({1, 1, h, w}), {height, width}, false)[0][0]; // float64
    const BilinearAxis rows(h, height), columns(w, width);
    ASSERT_EQ(rows.bands.front(), 0);
    ASSERT_EQ(rows.bands.back(), height);
    at::Tensor ours = at::empty({height, width}, at::kDouble);
    const auto m = map.accessor<double, 2>();
    for (int64_t y = 0; y < height; ++y)
        for (int64_t x = 0; x < width; ++x) {
            const auto i = static_cast<size_t>(y), j = static_cast<size_t>(x);
            const double wy = rows.weight[i], wx = columns.weight[j];
            ours[y][x]
                = (1 - wx) * ((1 - wy) * m[rows.first[i]][columns.first[j]] + wy * m[rows.second[i]][columns.first[j]])
                + wx * ((1 - wy) * m[rows.first[i]][columns.second[j]] + wy * m[rows.second[i]][columns.second[j]]);
        }
    const double difference = (ours - expected).abs().max().item<double>();
    EXPECT_LE(difference, 1e-12) << "grid " << h << "x" << w << " to " << height << "x" << width;
    // Within a band the pixels read the same two samples, with a rising weight.
    for (size_t b = 0; b + 1 < columns.bands.size(); ++b)
        for (int64_t x = columns.bands[b] + 1; x < columns.bands[b + 1]; ++x) {
            EXPECT_EQ(columns.first[static_cast<size_t>(x)], columns.first[static_cast<size_t>(columns.bands[b])]);
            EXPECT_GE(columns.weight[static_cast<size_t>(x)], columns.weight[static_cast<size_t>(x - 1)]);
        }
}

TEST_P(ThresholdCountsShapes, CountsEqualUpsampledMapsThresholded)
{
    const auto [h, w, height, width] = GetParam();
    at::manual_seed(2);
    const int64_t unitCount = 7, labelCount = 4;
    const at::Tensor maps = at::randn({unitCount, h, w});
    // Thresholds inside each map's range (cells the threshold crosses), one above every value (no
    // pixel), one below (every pixel).
    at::Tensor thresholds = std::get<0>(maps.flatten(1).kthvalue(std::max<int64_t>(1, h * w * 3 / 4), 1));
    thresholds[0] = maps[0].max().item<float>() + 1.0f;
    thresholds[1] = maps[1].min().item<float>() - 1.0f;
    thresholds = thresholds.contiguous();
    const at::Tensor labels = blockyLabels(height, width, labelCount);
    const std::vector<int64_t> units{6, 0, 1, 2, 3, 5}; // not in order, and not all
    const LabelTables tables(labels, height, width, labelCount);
    const at::Tensor ours = countAboveThresholds(maps, thresholds, units, tables);
    const at::Tensor reference
        = countAboveThresholdsUpsampled(maps, thresholds, units, labels, height, width, labelCount);
    ASSERT_EQ(ours.sizes(), (std::vector<int64_t>{6, labelCount}));
    ASSERT_EQ(reference.sizes(), ours.sizes());
    // The reference from ATen's maps directly: pixels near the threshold may fall either way.
    const at::Tensor up = at::upsample_bilinear2d(maps.unsqueeze(0), {height, width}, false)[0].flatten(1);
    const at::Tensor oneHot = at::one_hot(labels, labelCount).to(at::kFloat); // [P, labels]
    for (size_t k = 0; k < units.size(); ++k) {
        const int64_t u = units[k];
        const float t = thresholds[u].item<float>();
        const at::Tensor near = (up[u] - t).abs().le(1e-5f * std::max(1.0f, std::abs(t))).to(at::kFloat);
        const at::Tensor slack = near.matmul(oneHot).to(at::kLong);
        const at::Tensor difference = (ours[static_cast<int64_t>(k)] - reference[static_cast<int64_t>(k)]).abs();
        EXPECT_TRUE(difference.le(slack).all().item<bool>()) << "unit " << u << ": " << ours[static_cast<int64_t>(k)]
                                                             << " against " << reference[static_cast<int64_t>(k)];
    }
    const int64_t pixels = height * width;
    EXPECT_EQ(ours[1].sum().item<int64_t>(), 0); // unit 0: above every value
    EXPECT_EQ(ours[2].sum().item<int64_t>(), pixels); // unit 1: below every value
    EXPECT_TRUE(at::equal(ours[2], at::bincount(labels, {}, labelCount)));
    if (h * w > 1 && height >= h && width >= w) { // a threshold inside the range: some pixels pass, not all
        const int64_t some = ours[3].sum().item<int64_t>();
        EXPECT_GT(some, 0);
        EXPECT_LT(some, pixels);
    }
}

INSTANTIATE_TEST_SUITE_P(Grids, ThresholdCountsShapes,
    ::testing::Values(Shape{7, 7, 224, 224}, Shape{5, 9, 40, 56}, Shape{14, 10, 30, 20}, Shape{3, 4, 2, 3},
        Shape{1, 1, 8, 6}, Shape{6, 6, 37, 61}));

TEST(LabelTables, CountTheLabelsOfARectangleAsPixelByPixel)
{
    at::manual_seed(3);
    const int64_t height = 23, width = 31, count = 5;
    const at::Tensor labels = at::randint(count, {height * width}, at::kLong);
    const LabelTables tables(labels, height, width, count);
    const at::Tensor grid = labels.view({height, width});
    for (const auto& [y0, y1, x0, x1] : std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t>>{
             {0, height, 0, width}, {3, 4, 0, width}, {5, 17, 9, 10}, {22, 23, 30, 31}, {7, 7, 2, 9}}) {
        std::vector<int64_t> ours(count, 0);
        tables.addRectangle(y0, y1, x0, x1, ours.data());
        const at::Tensor expected = at::bincount(grid.slice(0, y0, y1).slice(1, x0, x1).flatten(), {}, count);
        for (int64_t c = 0; c < count; ++c)
            EXPECT_EQ(ours[static_cast<size_t>(c)], expected[c].item<int64_t>()) << y0 << " " << x0 << " label " << c;
    }
}

TEST(LabelTables, ALabelOutOfRangeIsRefusedWithItsValue)
{
    const at::Tensor labels = at::tensor({0, 1, 7, 2}, at::kLong);
    try {
        LabelTables(labels, 2, 2, 3);
        FAIL() << "a label of 7 among 3 was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("label 7 is not below 3"), std::string::npos) << e.what();
    }
}

} // namespace
} // namespace torchscope
