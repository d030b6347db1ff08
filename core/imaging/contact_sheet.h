#pragma once

// Pictures out: PNG files of image tensors and contact sheets (rows of captioned tiles), written
// atomically.

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

namespace torchscope {

struct SheetTile {
    at::Tensor image; // [C, H, W] in [0, 1], C = 1 or 3
    std::string caption; // one short line under the tile
};

struct SheetRow {
    std::string title; // at the left of the row
    std::vector<SheetTile> tiles;
};

// image: [C, H, W] in [0, 1] (C = 1 or 3); scaled by whole pixels to at least `minSide` when
// smaller (so a 28-pixel image stays sharp). Throws torchscope::Error.
void writePng(const std::string& path, const at::Tensor& image, int minSide = 0);

// Tiles of `tileSide` pixels (small images enlarged without smoothing), captions under them, a
// title before each row. Throws torchscope::Error.
void writeContactSheet(const std::string& path, const std::vector<SheetRow>& rows, int tileSide = 128);

} // namespace torchscope
