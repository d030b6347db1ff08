// Decoding with OpenCV against PIL (what torchvision's ImageFolder uses) on the same files.
#include "test_support.h"

#include "imaging/image_decoder.h"
#include "imaging/image_tensor.h"

namespace torchscope::test {
namespace {

struct ImageCase {
    const char* file;
    int sourceChannels;
    int bitDepth;
};

void PrintTo(const ImageCase& c, std::ostream* os)
{
    *os << c.file;
}

class DecodeLikePil : public ::testing::TestWithParam<ImageCase> { };

TEST_P(DecodeLikePil, SamePixels)
{
    const auto& c = GetParam();
    const DecodedImage image = decodeImage(fixture(std::string("images/") + c.file));
    EXPECT_EQ(image.sourceChannels, c.sourceChannels);
    EXPECT_EQ(image.sourceBitDepth, c.bitDepth);
    const auto expected = loadExpected("images_expected.pt");
    EXPECT_TRUE(tensorsClose(c.file, imageToTensor(image), expected.at(std::string(c.file) + ":decoded"), 1e-6));
}

INSTANTIATE_TEST_SUITE_P(Formats, DecodeLikePil,
    ::testing::Values(ImageCase{"rgb.png", 3, 8}, ImageCase{"grey.png", 1, 8}, ImageCase{"rgba.png", 4, 8},
        ImageCase{"rgb.bmp", 3, 8}, ImageCase{"rgb.tiff", 3, 8}, ImageCase{"rgb.webp", 3, 8},
        ImageCase{"rgb.jpg", 3, 8}, ImageCase{"grey16.png", 1, 16}),
    [](const auto& info) {
        std::string name = info.param.file;
        for (auto& ch : name)
            ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
        return name;
    });

TEST(ImageBatch, DecodedAndPreprocessedLikeTorchvision)
{
    const auto p = Preprocessing::fromJson(
        R"({"resize": 64, "crop": 56, "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]})");
    const at::Tensor batch = loadImageBatch({fixture("images/rgb.png"), fixture("images/grey16.png")}, p);
    EXPECT_EQ(batch.sizes().vec(), (std::vector<int64_t>{2, 3, 56, 56}));
    const auto expected = loadExpected("images_expected.pt");
    EXPECT_TRUE(tensorsClose("rgb.png", batch[0], expected.at("rgb.png:preprocessed"), 1e-5));
    EXPECT_TRUE(tensorsClose("grey16.png", batch[1], expected.at("grey16.png:preprocessed"), 1e-5));
}

TEST(ImageBatch, DifferentSizesWithoutCropAreExplained)
{
    const std::string message = errorOf([] {
        loadImageBatch({fixture("images/rgb.png"), fixture("images/grey16.png")}, Preprocessing::none());
    });
    EXPECT_NE(message.find("images of different sizes"), std::string::npos) << message;
}

TEST(Decode, NotAnImageSaysWhatItIs)
{
    const std::string message = errorOf([] { decodeImage(fixture("images/not_an_image.png")); });
    EXPECT_NE(message.find("text file"), std::string::npos) << message;
    EXPECT_NE(errorOf([] { decodeImage(fixture("images/missing.png")); }).find("no such file"), std::string::npos);
}

TEST(Decode, ListsImagesInFolders)
{
    const auto images = listImages(fixture("images"));
    EXPECT_EQ(images.size(), 9u); // 8 images and the text file with a .png name
    EXPECT_TRUE(std::is_sorted(images.begin(), images.end()));
}

} // namespace
} // namespace torchscope::test
