// Decoding with OpenCV against PIL (what torchvision's ImageFolder uses) on the same files.
#include "test_support.h"

#include "imaging/image_decoder.h"
#include "imaging/image_tensor.h"

#include <fstream>
#include <iterator>

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

// torchvision's ToTensor divides by 255 in float32; multiplying by 1 / 255 differs in the last bit for 126
// of the 256 values (enough to flip a ReLU6 gate of a real MobileNetV2). Lossless files must be equal.
TEST(DecodeLikeToTensor, LosslessFilesAndRealPhotosBitEqual)
{
    const auto expected = loadExpected("images_expected.pt");
    std::vector<std::pair<std::string, std::string>> files; // path, expected key
    for (const char* name : {"rgb.png", "grey.png", "rgba.png", "rgb.bmp", "rgb.tiff", "rgb.webp", "grey16.png"})
        files.emplace_back(fixture(std::string("images/") + name), std::string(name) + ":decoded");
    for (const char* name : {"astronaut_face.png", "astronaut_head.png", "cameraman_face.png", "cameraman_head.png"})
        files.emplace_back(sourceDir() + "/resources/face/photos/" + name, std::string("photo:") + name);
    for (const auto& [path, key] : files) {
        const at::Tensor decoded = imageToTensor(decodeImage(path));
        const at::Tensor want = expected.at(key);
        ASSERT_EQ(decoded.sizes(), want.sizes()) << path;
        EXPECT_TRUE(at::equal(decoded, want))
            << path << ": largest difference " << (decoded - want).abs().max().item<float>() << " in "
            << (decoded != want).sum().item<int64_t>() << " of " << want.numel() << " values";
    }
}

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

// A PNG chunk: length, type, data, CRC-32 (PNG's, over type and data).
std::string pngChunk(const std::string& type, const std::string& data)
{
    const std::string body = type + data;
    uint32_t crc = 0xffffffffu;
    for (const unsigned char byte : body) {
        crc ^= byte;
        for (int bit = 0; bit < 8; ++bit)
            crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
    }
    crc ^= 0xffffffffu;
    const auto bigEndian = [](uint32_t v) {
        return std::string{
            static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
    };
    return bigEndian(static_cast<uint32_t>(data.size())) + body + bigEndian(crc);
}

// A malformed colour profile (the "iCCP: too short" many cameras' files give libpng) is not applied by
// any decoder here, and it no longer makes libpng print to stderr: the pixels are those of the file
// without the chunk, and nothing is written.
TEST(Decode, AMalformedColourProfileIsIgnoredWithoutAWordOnStderr)
{
    std::ifstream in(fixture("images/rgb.png"), std::ios::binary);
    const std::string plain((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t afterHeader = 8 + 4 + 4 + 13 + 4; // signature, IHDR
    ASSERT_EQ(plain.compare(12, 4, "IHDR"), 0);
    // Name, its NUL, compression method 0, then a "deflated" profile of 3 bytes: too short for one.
    const std::string profiled = plain.substr(0, afterHeader) + pngChunk("iCCP", std::string("bad\0\0\x78\x9c\x03", 8))
        + plain.substr(afterHeader);
    const DecodedImage expected = decodeImageBytes(plain, "rgb.png");
    testing::internal::CaptureStderr();
    const DecodedImage decoded = decodeImageBytes(profiled, "profiled.png");
    const std::string printed = testing::internal::GetCapturedStderr();
    EXPECT_EQ(printed, "");
    EXPECT_EQ(decoded.width, expected.width);
    EXPECT_EQ(decoded.height, expected.height);
    EXPECT_EQ(decoded.pixels, expected.pixels);
    // A chunk list cut inside the profile's chunk is judged by the decoder as it is (an error, no crash).
    const std::string cut = profiled.substr(0, afterHeader + 10);
    EXPECT_NE(errorOf([&] { decodeImageBytes(cut, "cut.png"); }).find("cut.png"), std::string::npos);
}

TEST(Decode, ListsImagesInFolders)
{
    const auto images = listImages(fixture("images"));
    EXPECT_EQ(images.size(), 9u); // 8 images and the text file with a .png name
    EXPECT_TRUE(std::is_sorted(images.begin(), images.end()));
}

} // namespace
} // namespace torchscope::test
