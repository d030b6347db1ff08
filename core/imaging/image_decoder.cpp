#include "imaging/image_decoder.h"

#include "common/error.h"
#include "model/file_diagnosis.h"

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <turbojpeg.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace torchscope {

bool hasImageExtension(const std::string& path)
{
    std::string ext = std::filesystem::path(path).extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
    static const char* known[] = {".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp", ".pgm", ".ppm", ".pnm"};
    return std::any_of(std::begin(known), std::end(known), [&](const char* k) { return ext == k; });
}

std::vector<std::string> listImages(const std::string& folder)
{
    std::vector<std::string> images;
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(folder, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
        if (it->is_regular_file() && hasImageExtension(it->path().string()))
            images.push_back(it->path().string());
    if (ec)
        throw Error("cannot read folder '" + folder + "': " + ec.message());
    std::sort(images.begin(), images.end());
    return images;
}

namespace {

// Larger pictures are refused before decoding: as floats they would take gigabytes.
constexpr int64_t MaxPixels = int64_t{1} << 28;

std::string readFile(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw Error("cannot read image '" + path + "': cannot open it for reading (permissions?)");
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad())
        throw Error("cannot read image '" + path + "': reading failed");
    return bytes;
}

std::string tooLarge(int64_t width, int64_t height)
{
    if (width <= 0 || height <= 0)
        return "its header gives a size of " + std::to_string(width) + " × " + std::to_string(height) + " pixels";
    if (width > MaxPixels / height) // width * height > MaxPixels, without overflowing
        return "it is " + std::to_string(width) + " × " + std::to_string(height)
            + " pixels; TorchScope reads images up to " + std::to_string(MaxPixels >> 20) + " megapixels";
    return {};
}

uint32_t bigEndian32(const std::string& bytes, size_t offset)
{
    uint32_t value = 0;
    for (size_t i = 0; i < 4; ++i)
        value = (value << 8) | static_cast<unsigned char>(bytes[offset + i]);
    return value;
}

// OpenCV's libjpeg only warns about a JPEG cut short or damaged and fills the rest with grey.
// TurboJPEG, told to stop at the first warning, decodes it at 1/8 scale (every coefficient is
// still read, so truncation and corrupt data are found) to say so.
std::string jpegProblem(const std::string& bytes)
{
    const tjhandle handle = tjInitDecompress();
    if (!handle)
        return {};
    const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
    const auto size = static_cast<unsigned long>(bytes.size());
    int width = 0, height = 0, subsampling = 0, colourspace = 0;
    std::string problem;
    if (tjDecompressHeader3(handle, data, size, &width, &height, &subsampling, &colourspace) != 0) {
        problem = std::string("its JPEG header cannot be read (libjpeg: ") + tjGetErrorStr2(handle)
            + "): the file is damaged or cut short";
    } else if (problem = tooLarge(width, height); problem.empty()) {
        const tjscalingfactor eighth{1, 8};
        const int w = TJSCALED(width, eighth), h = TJSCALED(height, eighth);
        const bool cmyk = colourspace == TJCS_CMYK || colourspace == TJCS_YCCK;
        const int format = cmyk ? TJPF_CMYK : TJPF_GRAY;
        std::vector<unsigned char> small(static_cast<size_t>(w) * h * tjPixelSize[format]);
        if (tjDecompress2(handle, data, size, small.data(), w, 0, h, format, TJFLAG_STOPONWARNING) != 0)
            problem = std::string("the JPEG data is damaged or cut short (libjpeg: ") + tjGetErrorStr2(handle)
                + "); it was probably not fully downloaded or copied";
    }
    tjDestroy(handle);
    return problem;
}

// A PNG ends with an IEND chunk; libpng reads the rows of one cut short after its image data.
std::string pngProblem(const std::string& bytes)
{
    if (bytes.size() < 24 || bytes.compare(12, 4, "IHDR") != 0)
        return "its PNG header is missing or cut short";
    if (std::string problem = tooLarge(bigEndian32(bytes, 16), bigEndian32(bytes, 20)); !problem.empty())
        return problem;
    if (bytes.find("IEND", bytes.size() > 64 ? bytes.size() - 64 : 0) == std::string::npos)
        return "the PNG is cut short (it has no IEND chunk at its end); it was probably not fully downloaded or copied";
    return {};
}

// The PNG without its embedded colour profiles (iCCP chunks). OpenCV never applies a profile (nor do
// torchvision's decode_png or PIL's open: pixels are taken as they are stored), but libpng checks
// it, and prints "libpng warning: iCCP: known incorrect sRGB profile" (or "too short") to stderr
// for the many cameras' and editors' files with a malformed one: a warning about something that
// is not used. The pixels are the same with or without it. Empty when there is nothing to take out,
// or when the chunk list does not walk to the end (damaged: the decoder judges the file as it is).
std::string withoutColourProfiles(const std::string& png)
{
    if (png.find("iCCP") == std::string::npos)
        return {};
    std::string kept = png.substr(0, 8); // the signature
    size_t at = 8;
    while (at + 12 <= png.size()) {
        const uint64_t size = 12 + static_cast<uint64_t>(bigEndian32(png, at)); // length, type, data, CRC
        if (size > png.size() - at)
            return {};
        if (png.compare(at + 4, 4, "iCCP") != 0)
            kept.append(png, at, static_cast<size_t>(size));
        at += static_cast<size_t>(size);
    }
    return at == png.size() && kept.size() < png.size() ? kept : std::string();
}

// Formats OpenCV's build does not decode, named with what to do.
std::string unsupportedFormat(const std::string& kind)
{
    static const char* unsupported[] = {"a GIF image", "a HEIC image", "an AVIF image", "a Photoshop image (PSD)",
        "an icon (ICO)", "a JPEG XL or JPEG 2000 image"};
    if (std::find(std::begin(unsupported), std::end(unsupported), kind) != std::end(unsupported))
        return "this is " + kind
            + ", which TorchScope cannot read; convert it to PNG (for example with "
              "ImageMagick: convert IN OUT.png)";
    if (kind == "an SVG drawing")
        return "this is an SVG drawing (vector graphics), which TorchScope cannot read; render it to PNG "
               "(for example: rsvg-convert -o OUT.png IN.svg)";
    return {};
}

} // namespace

DecodedImage decodeImage(const std::string& path)
{
    if (!std::filesystem::exists(path))
        throw Error("cannot read image '" + path + "': no such file");
    if (!std::filesystem::is_regular_file(path))
        throw Error("cannot read image '" + path + "': it is not a regular file");
    return decodeImageBytes(readFile(path), path);
}

DecodedImage decodeImageBytes(const std::string& bytes, const std::string& path)
{
    const std::string start = bytes.substr(0, 64);
    const std::string kind = describeImageStart(start);
    std::string problem = unsupportedFormat(kind);
    if (problem.empty() && kind == "a JPEG image")
        problem = jpegProblem(bytes);
    else if (problem.empty() && kind == "a PNG image")
        problem = pngProblem(bytes);
    else if (problem.empty() && kind.empty())
        problem = "this is " + describeFileStart(start) + ", not an image";
    if (!problem.empty())
        throw Error("cannot read image '" + path + "': " + problem);

    const std::string decoded = kind == "a PNG image" ? withoutColourProfiles(bytes) : std::string();
    const std::string& given = decoded.empty() ? bytes : decoded;
    cv::Mat raw;
    try {
        const cv::Mat encoded(1, static_cast<int>(given.size()), CV_8U, const_cast<char*>(given.data()));
        raw = cv::imdecode(encoded, cv::IMREAD_UNCHANGED);
    } catch (const cv::Exception& e) {
        throw Error("cannot read image '" + path + "': " + e.what());
    }
    if (raw.empty())
        throw Error("cannot read image '" + path + "': this is " + kind + " that OpenCV cannot decode (damaged?)");
    if (std::string large = tooLarge(raw.cols, raw.rows); !large.empty())
        throw Error("cannot read image '" + path + "': " + large);

    DecodedImage image;
    image.path = path;
    image.width = raw.cols;
    image.height = raw.rows;
    image.sourceChannels = raw.channels();
    const int depth = raw.depth();
    image.sourceBitDepth = depth == CV_16U || depth == CV_16S ? 16 : depth == CV_32F || depth == CV_64F ? 32 : 8;
    // Divided, in float32, as torchvision's ToTensor (and PIL pipelines) do: x * (1 / 255.0) differs from
    // x / 255 in the last bit for 126 of the 256 values, enough to flip a ReLU6 gate of a real network.
    const float divisor = depth == CV_16U ? 65535.0f : depth == CV_8U ? 255.0f : 1.0f;

    cv::Mat colour;
    switch (raw.channels()) {
    case 1:
        colour = raw;
        break;
    case 3:
        cv::cvtColor(raw, colour, cv::COLOR_BGR2RGB);
        break;
    case 4:
        cv::cvtColor(raw, colour, cv::COLOR_BGRA2RGB);
        break;
    default:
        throw Error("cannot read image '" + path + "': it has " + std::to_string(raw.channels())
            + " channels; expected 1, 3 or 4");
    }
    cv::Mat floats;
    colour.convertTo(floats, CV_MAKETYPE(CV_32F, colour.channels())); // the integers, exactly
    image.channels = floats.channels();
    image.pixels.assign(
        reinterpret_cast<const float*>(floats.datastart), reinterpret_cast<const float*>(floats.dataend));
    if (divisor != 1.0f)
        for (float& value : image.pixels)
            value /= divisor;
    return image;
}

} // namespace torchscope

namespace torchscope {

Thumbnail makeThumbnail(const DecodedImage& image, int maxSide)
{
    Thumbnail thumbnail;
    if (image.pixels.empty())
        return thumbnail;
    const double scale = double(maxSide) / std::max(image.width, image.height);
    thumbnail.width = std::max(1, int(image.width * scale + 0.5));
    thumbnail.height = std::max(1, int(image.height * scale + 0.5));
    const cv::Mat source(
        image.height, image.width, CV_MAKETYPE(CV_32F, image.channels), const_cast<float*>(image.pixels.data()));
    cv::Mat small, rgb, bytes;
    // Area averaging to shrink; small images (28x28 Fashion-MNIST) grow with their pixels kept sharp.
    cv::resize(source, small, cv::Size(thumbnail.width, thumbnail.height), 0, 0,
        scale < 1.0 ? cv::INTER_AREA : cv::INTER_NEAREST);
    if (image.channels == 1)
        cv::cvtColor(small, rgb, cv::COLOR_GRAY2RGB);
    else
        rgb = small;
    rgb.convertTo(bytes, CV_8UC3, 255.0);
    thumbnail.rgb.assign(bytes.datastart, bytes.dataend);
    return thumbnail;
}

} // namespace torchscope
