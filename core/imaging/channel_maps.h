#pragma once

#include "common/float_tensor.h"
#include "imaging/colormap.h"

#include <cstdint>
#include <vector>

namespace torchscope {

enum class Contrast {
    PerChannel, // each channel stretched over its own min..max
    Shared, // one min..max for all channels, so channels compare
    Symmetric // one range -m..m centred on zero (gradients, signed maps)
};

// A layer's output for one image viewed as channel maps: [C, H, W] (or [C] vectors as C maps
// of 1x1, [T, F] as one map). Returns the values scaled to [0, 1] in the same layout.
std::vector<float> normalizeChannels(const FloatTensor& maps, Contrast contrast);

// Number of channels and map size of an output for one image: [C,H,W] -> (C,H,W), [F] -> (F,1,1),
// [T,F] -> (1,T,F).
struct MapLayout {
    int64_t channels = 0;
    int64_t height = 0;
    int64_t width = 0;
};
MapLayout mapLayout(const std::vector<int64_t>& shapeWithoutBatch);

// An RGB8 picture of `map` (height x width values in [0, 1]) upsampled bilinearly to the image's
// size and blended over it: out = (1 - alpha) * image + alpha * colour(map).
// image: RGB8, imageWidth x imageHeight, row-major.
std::vector<uint8_t> overlayMap(const std::vector<uint8_t>& image, int imageWidth, int imageHeight, const float* map,
    int64_t mapWidth, int64_t mapHeight, ColorMap colorMap, float alpha);

} // namespace torchscope
