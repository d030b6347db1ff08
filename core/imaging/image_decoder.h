#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace torchscope {

// A decoded image as plain values: RGB (or grey) floats in [0, 1], row-major HWC.
struct DecodedImage {
    std::string path;
    int width = 0;
    int height = 0;
    int channels = 0; // 1 (grey) or 3 (RGB); an alpha channel is dropped, as PIL's convert("RGB")
    int sourceChannels = 0;
    int sourceBitDepth = 0; // 8, 16 or 32
    std::vector<float> pixels;
};

// PNG, JPEG, BMP, TIFF, WebP, ...; grey, RGB, RGBA; 8 or 16 bit. Throws torchscope::Error saying
// what the file is when it cannot be decoded.
// A JPEG or PNG cut short or damaged is refused (OpenCV would fill the rest with grey), and so
// are formats OpenCV cannot read (GIF, HEIC, SVG ...), by name.
DecodedImage decodeImage(const std::string& path);
// The same from the file's bytes; `path` names it in messages.
DecodedImage decodeImageBytes(const std::string& bytes, const std::string& path);

// An RGB8 copy whose longest side is maxSide, for thumbnails.
struct Thumbnail {
    int width = 0;
    int height = 0;
    std::vector<uint8_t> rgb;
};
Thumbnail makeThumbnail(const DecodedImage& image, int maxSide);

bool hasImageExtension(const std::string& path);

// Image files in a folder and its subfolders, sorted by path.
std::vector<std::string> listImages(const std::string& folder);

} // namespace torchscope
