#include "maps/channel_maps.h"
#include "maps/colormap.h"
#include "test_support.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>

#include <gtest/gtest.h>

namespace torchscope {
namespace {

TEST(ChannelMaps, ContrastModes)
{
    // Two 1x2 channels: {0, 1} and {2, 4}. Per channel, each range takes in zero, so zero is
    // drawn as zero everywhere and a channel of 2..4 is not stretched to look like one of 0..4.
    const FloatTensor maps{{2, 1, 2}, {0.f, 1.f, 2.f, 4.f}};
    EXPECT_EQ(normalizeChannels(maps, Contrast::PerChannel), (std::vector<float>{0.f, 1.f, 0.5f, 1.f}));
    EXPECT_EQ(normalizeChannels(maps, Contrast::Shared), (std::vector<float>{0.f, 0.25f, 0.5f, 1.f}));
    const FloatTensor signedMaps{{1, 1, 2}, {-1.f, 0.5f}};
    EXPECT_EQ(normalizeChannels(signedMaps, Contrast::Symmetric), (std::vector<float>{0.f, 0.75f}));
    EXPECT_EQ(normalizeChannels(signedMaps, Contrast::PerChannel), (std::vector<float>{0.f, 1.f}));
}

TEST(ChannelMaps, ConstantChannelsAreMarkedNotStretched)
{
    // Channels: all zero, constant 3, constant -2, varying 1..2.
    const FloatTensor maps{{4, 1, 2}, {0.f, 0.f, 3.f, 3.f, -2.f, -2.f, 1.f, 2.f}};
    const NormalizedMaps n = normalizeChannelMaps(maps, Contrast::PerChannel);
    EXPECT_EQ(n.values, (std::vector<float>{0.f, 0.f, 1.f, 1.f, 0.f, 0.f, 0.5f, 1.f}));
    ASSERT_EQ(n.channels.size(), 4u);
    EXPECT_TRUE(n.channels[0].constant);
    EXPECT_TRUE(n.channels[1].constant);
    EXPECT_TRUE(n.channels[2].constant);
    EXPECT_FALSE(n.channels[3].constant);
    EXPECT_EQ(n.channels[1].low, 0.f);
    EXPECT_EQ(n.channels[1].high, 3.f);
    EXPECT_EQ(n.channels[2].low, -2.f);
    EXPECT_EQ(n.channels[2].high, 0.f);
    // Under a shared range a constant channel sits where its value is.
    const NormalizedMaps shared = normalizeChannelMaps(maps, Contrast::Shared);
    EXPECT_FLOAT_EQ(shared.values[2], 1.f);
    EXPECT_FLOAT_EQ(shared.values[0], 0.4f);
    EXPECT_EQ(shared.channels[0].low, -2.f);
    EXPECT_EQ(shared.channels[0].high, 3.f);
    // An all-zero layer does not divide by zero.
    EXPECT_EQ(normalizeChannels(FloatTensor{{1, 1, 2}, {0.f, 0.f}}, Contrast::Shared), (std::vector<float>{0.f, 0.f}));
    EXPECT_EQ(
        normalizeChannels(FloatTensor{{1, 1, 2}, {0.f, 0.f}}, Contrast::Symmetric), (std::vector<float>{0.5f, 0.5f}));
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

TEST(ColorMaps, EqualMatplotlibsBytes)
{
    // colormaps.json: matplotlib's `cmap(t, bytes=True)` at 1,001 even steps, at every table
    // boundary k / 256 and just below it, and outside [0, 1].
    std::ifstream in(test::fixture("colormaps.json"));
    const auto maps = nlohmann::json::parse(in);
    ASSERT_EQ(maps.size(), colorMapNames().size());
    for (const auto& [map, name] : colorMapNames()) {
        SCOPED_TRACE(name);
        const auto& expected = maps.at(name);
        const auto& t = expected.at("t");
        ASSERT_GT(t.size(), 1000u);
        int mismatches = 0;
        for (size_t i = 0; i < t.size(); ++i) {
            const auto rgb = colorAt(map, t[i].get<float>());
            const std::array<uint8_t, 3> want{expected["rgb"][i][0].get<uint8_t>(),
                expected["rgb"][i][1].get<uint8_t>(), expected["rgb"][i][2].get<uint8_t>()};
            if (rgb != want && ++mismatches <= 3)
                ADD_FAILURE() << "t = " << t[i].get<float>() << ": " << int(rgb[0]) << "," << int(rgb[1]) << ","
                              << int(rgb[2]) << " where matplotlib gives " << int(want[0]) << "," << int(want[1]) << ","
                              << int(want[2]);
        }
        EXPECT_EQ(mismatches, 0);
    }
}

TEST(ColorMaps, NotANumberIsTheLowEnd)
{
    EXPECT_EQ(colorAt(ColorMap::Viridis, std::nanf("")), colorAt(ColorMap::Viridis, 0.f));
}

} // namespace
} // namespace torchscope
