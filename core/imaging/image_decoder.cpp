#include "imaging/image_decoder.h"

#include "common/error.h"
#include "model/file_diagnosis.h"

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>

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

DecodedImage decodeImage(const std::string& path)
{
    if (!std::filesystem::is_regular_file(path))
        throw Error("cannot read image '" + path + "': no such file");
    cv::Mat raw;
    try {
        raw = cv::imread(path, cv::IMREAD_UNCHANGED);
    } catch (const cv::Exception& e) {
        throw Error("cannot read image '" + path + "': " + e.what());
    }
    if (raw.empty()) {
        std::ifstream in(path, std::ios::binary);
        std::string start(64, '\0');
        in.read(start.data(), 64);
        start.resize(static_cast<size_t>(in.gcount()));
        throw Error("cannot read image '" + path + "': this is " + describeFileStart(start)
            + ", not an image OpenCV can decode");
    }

    DecodedImage image;
    image.path = path;
    image.width = raw.cols;
    image.height = raw.rows;
    image.sourceChannels = raw.channels();
    const int depth = raw.depth();
    image.sourceBitDepth = depth == CV_16U || depth == CV_16S ? 16 : depth == CV_32F || depth == CV_64F ? 32 : 8;
    const double scale = depth == CV_16U ? 1.0 / 65535.0 : depth == CV_8U ? 1.0 / 255.0 : 1.0;

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
    colour.convertTo(floats, CV_MAKETYPE(CV_32F, colour.channels()), scale);
    image.channels = floats.channels();
    image.pixels.assign(
        reinterpret_cast<const float*>(floats.datastart), reinterpret_cast<const float*>(floats.dataend));
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
