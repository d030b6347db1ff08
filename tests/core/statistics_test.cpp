#include "record/tensor_statistics.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace torchscope {
namespace {

TEST(LayerStatistics, KnownNumbers)
{
    // Two samples, two channels of 1x2: channel 0 holds {0, 2, 4, 6}, channel 1 holds {1, 0, 5, 0}.
    const at::Tensor t = at::tensor({0.f, 2.f, 1.f, 0.f, 4.f, 6.f, 5.f, 0.f}).view({2, 2, 1, 2});
    const LayerStatistics s = computeLayerStatistics(t, 4);
    EXPECT_EQ(s.samples, 2);
    EXPECT_EQ(s.shape, (std::vector<int64_t>{2, 2, 1, 2}));
    EXPECT_DOUBLE_EQ(s.channelMean[0], 3.0);
    EXPECT_DOUBLE_EQ(s.channelMean[1], 1.5);
    EXPECT_DOUBLE_EQ(s.channelStd[0], std::sqrt(5.0)); // population std of {0, 2, 4, 6}
    EXPECT_DOUBLE_EQ(s.channelZeroFraction[0], 0.25);
    EXPECT_DOUBLE_EQ(s.channelZeroFraction[1], 0.5);
    EXPECT_DOUBLE_EQ(s.channelMax[0], 6.0);
    EXPECT_DOUBLE_EQ(s.channelMin[1], 0.0);
    EXPECT_DOUBLE_EQ(s.zeroFraction, 3.0 / 8.0);
    EXPECT_EQ(s.histogram, (std::vector<int64_t>{4, 1, 1, 2})); // bins of 1.5 over [0, 6]
}

TEST(LayerStatistics, VectorsHaveOneChannelPerFeature)
{
    const LayerStatistics s = computeLayerStatistics(at::tensor({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}).view({2, 3}));
    ASSERT_EQ(s.channelMean.size(), 3u);
    EXPECT_DOUBLE_EQ(s.channelMean[2], 4.5);
}

} // namespace
} // namespace torchscope
