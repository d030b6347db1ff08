#include "maps/channel_maps.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

namespace torchscope {

MapLayout mapLayout(const std::vector<int64_t>& shape)
{
    switch (shape.size()) {
    case 0:
        return {1, 1, 1};
    case 1:
        return {shape[0], 1, 1};
    case 2:
        return {1, shape[0], shape[1]};
    default: {
        int64_t height = 1;
        for (size_t i = 1; i + 1 < shape.size(); ++i)
            height *= shape[i];
        return {shape[0], height, shape.back()};
    }
    }
}

TokenGrid tokenGrid(const std::vector<int64_t>& shape)
{
    if (shape.size() != 2)
        return {};
    for (int64_t extra : {1, 0}) {
        const int64_t patches = shape[0] - extra;
        const auto side
            = static_cast<int64_t>(std::lround(std::sqrt(static_cast<double>(std::max<int64_t>(patches, 0)))));
        if (side >= 2 && side * side == patches)
            return {extra, side, shape[1]};
    }
    return {};
}

FloatTensor tokenMaps(const FloatTensor& tokens, const TokenGrid& layout)
{
    const int64_t patches = layout.side * layout.side, features = layout.features;
    FloatTensor maps{{features, layout.side, layout.side}, std::vector<float>(static_cast<size_t>(patches * features))};
    for (int64_t p = 0; p < patches; ++p)
        for (int64_t d = 0; d < features; ++d)
            maps.values[static_cast<size_t>(d * patches + p)]
                = tokens.values[static_cast<size_t>((layout.extraTokens + p) * features + d)];
    return maps;
}

FloatTensor classTokens(const FloatTensor& tokens, const TokenGrid& layout)
{
    const auto end = tokens.values.begin() + layout.extraTokens * layout.features;
    return {{layout.extraTokens, layout.features}, std::vector<float>(tokens.values.begin(), end)};
}

namespace {

std::pair<float, float> valueRange(const std::vector<float>& values, size_t begin, size_t end)
{
    float lo = std::numeric_limits<float>::max(), hi = std::numeric_limits<float>::lowest();
    for (size_t i = begin; i < end; ++i) {
        lo = std::min(lo, values[i]);
        hi = std::max(hi, values[i]);
    }
    return {lo, hi};
}

// Scales each channel to [0, 1] over the range `rangeOf(own low, own high)` gives it; a range
// without span draws the channel at `zero`.
NormalizedMaps scaleChannels(
    const FloatTensor& maps, const std::function<ChannelRange(float, float)>& rangeOf, float zero)
{
    NormalizedMaps out;
    out.values.assign(maps.values.size(), 0.0f);
    if (maps.values.empty())
        return out;
    const MapLayout layout = mapLayout(maps.shape);
    const size_t channels = static_cast<size_t>(std::max<int64_t>(layout.channels, 1));
    const size_t size = maps.values.size() / channels;
    out.channels.resize(channels);
    for (size_t c = 0; c < channels; ++c) {
        const auto [ownLo, ownHi] = valueRange(maps.values, c * size, (c + 1) * size);
        const ChannelRange r = out.channels[c] = rangeOf(ownLo, ownHi);
        const float span = r.high - r.low;
        for (size_t i = c * size; i < (c + 1) * size; ++i)
            out.values[i] = span > 0 ? std::clamp((maps.values[i] - r.low) / span, 0.f, 1.f) : zero;
    }
    return out;
}

} // namespace

NormalizedMaps normalizeChannelMaps(const FloatTensor& maps, Contrast contrast)
{
    // Plain variables: lambdas cannot capture structured bindings before C++20 (clang 14 refuses).
    const auto range = valueRange(maps.values, 0, maps.values.size());
    float sharedLo = range.first, sharedHi = range.second;
    if (contrast == Contrast::Symmetric) {
        const float m = std::max(std::abs(sharedLo), std::abs(sharedHi));
        sharedLo = -m;
        sharedHi = m;
    }
    // Only all zeros have no span: drawn where zero sits (the middle of a symmetric scale).
    return scaleChannels(
        maps,
        [&](float ownLo, float ownHi) {
            if (contrast == Contrast::PerChannel)
                return ChannelRange{std::min(ownLo, 0.f), std::max(ownHi, 0.f), ownLo == ownHi};
            return ChannelRange{sharedLo, sharedHi, ownLo == ownHi};
        },
        contrast == Contrast::Symmetric ? 0.5f : 0.f);
}

NormalizedMaps normalizeChannelMaps(const FloatTensor& maps, float low, float high)
{
    return scaleChannels(
        maps,
        [&](float ownLo, float ownHi) {
            return ChannelRange{low, high, ownLo == ownHi};
        },
        0.5f);
}

std::vector<float> normalizeChannels(const FloatTensor& maps, Contrast contrast)
{
    return normalizeChannelMaps(maps, contrast).values;
}

std::vector<uint8_t> overlayMap(const std::vector<uint8_t>& image, int imageWidth, int imageHeight, const float* map,
    int64_t mapWidth, int64_t mapHeight, ColorMap colorMap, float alpha)
{
    std::vector<uint8_t> out(image.size());
    for (int y = 0; y < imageHeight; ++y) {
        // Pixel centres aligned as in align_corners=False interpolation.
        const float sy = std::clamp((y + 0.5f) * mapHeight / imageHeight - 0.5f, 0.0f, float(mapHeight - 1));
        const auto y0 = static_cast<int64_t>(sy);
        const int64_t y1 = std::min(y0 + 1, mapHeight - 1);
        const float fy = sy - y0;
        for (int x = 0; x < imageWidth; ++x) {
            const float sx = std::clamp((x + 0.5f) * mapWidth / imageWidth - 0.5f, 0.0f, float(mapWidth - 1));
            const auto x0 = static_cast<int64_t>(sx);
            const int64_t x1 = std::min(x0 + 1, mapWidth - 1);
            const float fx = sx - x0;
            const float v = (1 - fy) * ((1 - fx) * map[y0 * mapWidth + x0] + fx * map[y0 * mapWidth + x1])
                + fy * ((1 - fx) * map[y1 * mapWidth + x0] + fx * map[y1 * mapWidth + x1]);
            const auto colour = colorAt(colorMap, v);
            const size_t p = (static_cast<size_t>(y) * imageWidth + x) * 3;
            for (size_t c = 0; c < 3; ++c)
                out[p + c] = static_cast<uint8_t>(std::lround((1 - alpha) * image[p + c] + alpha * colour[c]));
        }
    }
    return out;
}

} // namespace torchscope
