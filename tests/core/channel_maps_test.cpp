#include "imaging/channel_maps.h"

#include <gtest/gtest.h>

namespace torchscope {
namespace {

TEST(ChannelMaps, ContrastModes)
{
    // Two 1x2 channels: {0, 1} and {2, 4}.
    const FloatTensor maps{{2, 1, 2}, {0.f, 1.f, 2.f, 4.f}};
    EXPECT_EQ(normalizeChannels(maps, Contrast::PerChannel), (std::vector<float>{0.f, 1.f, 0.f, 1.f}));
    EXPECT_EQ(normalizeChannels(maps, Contrast::Shared), (std::vector<float>{0.f, 0.25f, 0.5f, 1.f}));
    const FloatTensor signedMaps{{1, 1, 2}, {-1.f, 0.5f}};
    EXPECT_EQ(normalizeChannels(signedMaps, Contrast::Symmetric), (std::vector<float>{0.f, 0.75f}));
    // A constant channel does not divide by zero.
    EXPECT_EQ(
        normalizeChannels(FloatTensor{{1, 1, 2}, {3.f, 3.f}}, Contrast::PerChannel), (std::vector<float>{0.5f, 0.5f}));
    // A channel that never fires (all zero, after a ReLU) is drawn as no activation, not mid-scale.
    EXPECT_EQ(
        normalizeChannels(FloatTensor{{1, 1, 2}, {0.f, 0.f}}, Contrast::PerChannel), (std::vector<float>{0.f, 0.f}));
}

TEST(ChannelMaps, Layouts)
{
    EXPECT_EQ(mapLayout({64, 7, 7}).channels, 64);
    EXPECT_EQ(mapLayout({10}).channels, 10);
    EXPECT_EQ(mapLayout({10}).height, 1);
    EXPECT_EQ(mapLayout({197, 768}).height, 197);
}

TEST(ChannelMaps, OverlayBlendsTheUpsampledMap)
{
    const std::vector<uint8_t> image(4 * 4 * 3, 100);
    const float map[] = {0.f, 1.f, 0.f, 1.f}; // 2x2: left column 0, right column 1
    const auto out = overlayMap(image, 4, 4, map, 2, 2, ColorMap::Grey, 0.5f);
    EXPECT_EQ(out[0], 50); // leftmost pixel: grey 0 blended with 100
    EXPECT_EQ(out[3 * 3], 178); // rightmost pixel of row 0: round(0.5 * 100 + 0.5 * 255)
    EXPECT_GT(out[1 * 3], out[0]); // bilinear ramp in between
}

TEST(ColorMaps, EndsAndClamping)
{
    EXPECT_EQ(colorAt(ColorMap::Viridis, 0.f), (std::array<uint8_t, 3>{68, 1, 84}));
    EXPECT_EQ(colorAt(ColorMap::Viridis, 1.f), (std::array<uint8_t, 3>{253, 231, 37}));
    EXPECT_EQ(colorAt(ColorMap::Grey, 2.f), (std::array<uint8_t, 3>{255, 255, 255}));
    EXPECT_EQ(colorAt(ColorMap::Grey, 0.5f), (std::array<uint8_t, 3>{128, 128, 128}));
}

} // namespace
} // namespace torchscope
