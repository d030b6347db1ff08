// Preprocessing against torchvision.transforms.functional on the same decoded pixels.
#include "test_support.h"

#include "preprocess/preprocess_tensor.h"
#include "preprocess/preprocessing.h"

namespace torchscope::test {
namespace {

Preprocessing fixturePreprocessing()
{
    return Preprocessing::fromJson(
        R"({"resize": 64, "crop": 56, "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]})");
}

class PreprocessLikeTorchvision : public ::testing::TestWithParam<const char*> { };

TEST_P(PreprocessLikeTorchvision, ResizeCropNormalize)
{
    const auto expected = loadExpected("images_expected.pt");
    const std::string name = GetParam();
    const at::Tensor decoded = expected.at(name + ":decoded");
    EXPECT_TRUE(tensorsClose(
        name, preprocessImage(decoded, fixturePreprocessing()), expected.at(name + ":preprocessed"), 1e-5));

    Preprocessing grey;
    grey.grayscale = true;
    grey.resize = 40;
    grey.cropHeight = grey.cropWidth = 28;
    EXPECT_TRUE(tensorsClose(name + " grey", preprocessImage(decoded, grey), expected.at(name + ":grey"), 1e-5));
}

INSTANTIATE_TEST_SUITE_P(Images, PreprocessLikeTorchvision, ::testing::Values("rgb.png", "grey.png", "grey16.png"),
    [](const auto& info) { return std::string(info.param).substr(0, std::string(info.param).find('.')); });

TEST(Preprocessing, Presets)
{
    const auto imagenet = Preprocessing::fromSpec("imagenet");
    EXPECT_EQ(imagenet.resize, 256);
    EXPECT_EQ(imagenet.cropHeight, 224);
    EXPECT_EQ(imagenet.mean.size(), 3u);
    const auto none = Preprocessing::fromSpec("none");
    EXPECT_EQ(none.resize, 0);
    const at::Tensor image = at::rand({3, 5, 7});
    EXPECT_TRUE(preprocessImage(image, none).equal(image));
}

TEST(Preprocessing, BadJsonSaysWhichField)
{
    EXPECT_NE(
        errorOf([] { Preprocessing::fromJson(R"({"mean": [0.5], "std": []})"); }).find("1 mean value(s) but 0 std"),
        std::string::npos);
    EXPECT_NE(errorOf([] { Preprocessing::fromJson(R"({"resize": "big"})"); }).find("'resize'"), std::string::npos);
    EXPECT_NE(errorOf([] { Preprocessing::fromJson("{nope"); }).find("not valid JSON"), std::string::npos);
    EXPECT_NE(errorOf([] { Preprocessing::fromSpec("/no/such.json"); }).find("neither 'none', 'imagenet'"),
        std::string::npos);
}

TEST(Preprocessing, MeanOfTheWrongLength)
{
    Preprocessing p;
    p.mean = {0.5, 0.5};
    p.std = {1, 1};
    EXPECT_NE(errorOf([&] {
        preprocessImage(at::rand({3, 4, 4}), p);
    }).find("2 mean values for an image with 3"),
        std::string::npos);
}

} // namespace
} // namespace torchscope::test
