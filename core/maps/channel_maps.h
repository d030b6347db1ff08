#pragma once

#include "common/float_tensor.h"
#include "maps/colormap.h"

#include <cstdint>
#include <vector>

namespace torchscope {

enum class Contrast {
    PerChannel, // each channel over its own range, widened to take in zero: zero is always zero
    Shared, // one min..max for all channels, so channels compare
    Symmetric // one range -m..m centred on zero (gradients, signed maps)
};

struct ChannelRange {
    float low = 0.f; // the value drawn at 0
    float high = 0.f; // the value drawn at 1
    bool constant = false; // every value of the channel is the same: no contrast to show
};

struct NormalizedMaps {
    std::vector<float> values; // scaled to [0, 1], in the layout of the input
    std::vector<ChannelRange> channels;
};

// A layer's output for one image viewed as channel maps: [C, H, W] (or [C] vectors as C maps
// of 1x1, [T, F] as one map), scaled to [0, 1] with each channel's range. A range of zero width
// (a constant channel under per-channel contrast, e.g. all zero) draws its value where it sits
// against zero: 0 at the bottom, a positive constant at the top, and marks the channel constant.
NormalizedMaps normalizeChannelMaps(const FloatTensor& maps, Contrast contrast);
std::vector<float> normalizeChannels(const FloatTensor& maps, Contrast contrast); // the values only
// Every channel on one given scale, low … high (maps of two runs side by side on the same colours).
NormalizedMaps normalizeChannelMaps(const FloatTensor& maps, float low, float high);

// Number of channels and map size of an output for one image: [C,H,W] -> (C,H,W), [F] -> (F,1,1),
// [T,F] -> (1,T,F).
struct MapLayout {
    int64_t channels = 0;
    int64_t height = 0;
    int64_t width = 0;
};
MapLayout mapLayout(const std::vector<int64_t>& shapeWithoutBatch);

// Vision transformer tokens: one image's [T, D] output whose T is a square grid of patches,
// after one class token (ViT) or none. `side` is 0 when the shape is not such a grid.
struct TokenGrid {
    int64_t extraTokens = 0; // class tokens before the patches
    int64_t side = 0; // the patch grid is side x side
    int64_t features = 0;
};
TokenGrid tokenGrid(const std::vector<int64_t>& shapeWithoutBatch);
// The patches of [T, D] tokens as D maps of side x side: [D, side, side].
FloatTensor tokenMaps(const FloatTensor& tokens, const TokenGrid& layout);
// The class token(s) before the patches: [extraTokens, D].
FloatTensor classTokens(const FloatTensor& tokens, const TokenGrid& layout);

// An RGB8 picture of `map` (height x width values in [0, 1]) upsampled bilinearly to the image's
// size and blended over it: out = (1 - alpha) * image + alpha * colour(map).
// image: RGB8, imageWidth x imageHeight, row-major.
std::vector<uint8_t> overlayMap(const std::vector<uint8_t>& image, int imageWidth, int imageHeight, const float* map,
    int64_t mapWidth, int64_t mapHeight, ColorMap colorMap, float alpha);

} // namespace torchscope
