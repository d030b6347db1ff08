#include "graph/request.h"

#include "common/strings.h"

#include <gtest/gtest.h>

namespace torchscope {
namespace {

TEST(GrabSpec, Parses)
{
    EXPECT_EQ(GrabSpec::parse("layer1").kind, CaptureKind::Output);
    const auto input = GrabSpec::parse("layer1.0:in1");
    EXPECT_EQ(input.kind, CaptureKind::Input);
    EXPECT_EQ(input.inputIndex, 1);
    EXPECT_EQ(input.selector, "layer1.0");
    EXPECT_EQ(GrabSpec::parse("fc:grad").kind, CaptureKind::Gradient);
    const auto attention = GrabSpec::parse("blocks.*.attn:attention");
    EXPECT_EQ(attention.kind, CaptureKind::Attention);
    EXPECT_EQ(attention.selector, "blocks.*.attn");
    EXPECT_EQ(attention.suffix(), ":attention");
    const auto key = CaptureKey::parse("blocks.0.attn:attention#2");
    EXPECT_EQ(key.kind, CaptureKind::Attention);
    EXPECT_EQ(key.path, "blocks.0.attn");
    EXPECT_EQ(key.call, 2);
    EXPECT_EQ(key.format(), "blocks.0.attn:attention#2");
    const auto byType = GrabSpec::parse("type:Conv2d");
    EXPECT_EQ(byType.selector, "type:Conv2d");
    EXPECT_EQ(byType.kind, CaptureKind::Output);
    EXPECT_EQ(GrabSpec::parse("type:Conv2d:grad").selector, "type:Conv2d");
}

TEST(GrabSpec, RejectsUnknownSuffix)
{
    try {
        GrabSpec::parse("layer1:gradient");
        FAIL();
    } catch (const std::exception& e) {
        EXPECT_NE(std::string(e.what()).find("unknown suffix ':gradient'"), std::string::npos) << e.what();
    }
}

TEST(CaptureKey, ParsesEveryKeyTheEngineWrites)
{
    const CaptureKey later = CaptureKey::parse("layer1.0.conv1:in1#12");
    EXPECT_EQ(later.path, "layer1.0.conv1");
    EXPECT_EQ(later.kind, CaptureKind::Input);
    EXPECT_EQ(later.inputIndex, 1);
    EXPECT_EQ(later.call, 12);
    EXPECT_EQ(later.grab(), "layer1.0.conv1:in1");
    const CaptureKey gradient = CaptureKey::parse("features.3:grad#1");
    EXPECT_EQ(gradient.path, "features.3");
    EXPECT_EQ(gradient.kind, CaptureKind::Gradient);
    EXPECT_EQ(gradient.call, 1);
    EXPECT_EQ(CaptureKey::parse("fc#2").path, "fc");
    EXPECT_EQ(CaptureKey::parse("fc#2").kind, CaptureKind::Output);
    EXPECT_EQ(CaptureKey::parse("input:grad").path, "input");
    // Names that are not module captures stay whole.
    for (const std::string name : {"output", "probe:footwear", "", "a:b:c", "x#", "x#y", "type:Conv2d", "m:in"}) {
        const CaptureKey key = CaptureKey::parse(name);
        EXPECT_EQ(key.path, name);
        EXPECT_EQ(key.kind, CaptureKind::Output) << name;
        EXPECT_EQ(key.call, 0) << name;
        EXPECT_EQ(key.format(), name);
    }
}

TEST(CaptureKey, FormatsWhatItParses)
{
    for (const std::string key : {"layer1", "layer1#1", "layer1:in0", "layer1:in3#7", "layer4.1.relu:grad",
             "layer4.1.relu:grad#2", "", "output"})
        EXPECT_EQ(CaptureKey::parse(key).format(), key);
    EXPECT_EQ((CaptureKey{"blocks.0", CaptureKind::Gradient, 0, 3}).format(), "blocks.0:grad#3");
}

TEST(EditSpec, Parses)
{
    const auto zero = EditSpec::parse("layer2:zero:0,5-7");
    EXPECT_EQ(zero.kind, EditKind::ZeroChannels);
    EXPECT_EQ(zero.channels, (std::vector<int64_t>{0, 5, 6, 7}));
    const auto scale = EditSpec::parse("layer3:scale:1:0.5");
    EXPECT_EQ(scale.kind, EditKind::ScaleChannels);
    EXPECT_DOUBLE_EQ(scale.factor, 0.5);
    EXPECT_TRUE(EditSpec::parse("layer3:replace").takesTensor());
    EXPECT_EQ(EditSpec::parse(zero.toString()).channels, zero.channels);
}

TEST(EditSpec, RejectsBadText)
{
    for (const char* bad :
        {"layer2", "layer2:zero", "layer2:zero:a", "layer2:scale:1", "layer2:zero:-1", "layer2:blur"}) {
        try {
            EditSpec::parse(bad);
            ADD_FAILURE() << bad << " was accepted";
        } catch (const std::exception& e) {
            EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
        }
    }
}

TEST(Strings, ClosestMatches)
{
    EXPECT_EQ(
        closestMatches("layr1", {"layer1", "layer2", "fc", ""}, 2), (std::vector<std::string>{"layer1", "layer2"}));
    EXPECT_EQ(levenshtein("kitten", "sitting"), 3u);
}

} // namespace
} // namespace torchscope
