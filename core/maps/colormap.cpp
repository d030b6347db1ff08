#include "maps/colormap.h"

#include <algorithm>
#include <cmath>

namespace torchscope {
namespace {

using Anchors = std::vector<std::array<uint8_t, 3>>; // evenly spaced over [0, 1]

const Anchors& anchors(ColorMap map)
{
    static const Anchors viridis{{68, 1, 84}, {71, 44, 122}, {59, 81, 139}, {44, 113, 142}, {33, 144, 141},
        {39, 173, 129}, {92, 200, 99}, {170, 220, 50}, {253, 231, 37}};
    static const Anchors magma{{0, 0, 4}, {28, 16, 68}, {79, 18, 123}, {129, 37, 129}, {181, 54, 122}, {229, 80, 100},
        {251, 135, 97}, {254, 194, 135}, {252, 253, 191}};
    static const Anchors grey{{0, 0, 0}, {255, 255, 255}};
    static const Anchors coolWarm{{59, 76, 192}, {141, 176, 254}, {221, 221, 221}, {244, 154, 123}, {180, 4, 38}};
    switch (map) {
    case ColorMap::Viridis:
        return viridis;
    case ColorMap::Magma:
        return magma;
    case ColorMap::Grey:
        return grey;
    case ColorMap::CoolWarm:
        return coolWarm;
    }
    return viridis;
}

} // namespace

const std::vector<std::pair<ColorMap, std::string>>& colorMapNames()
{
    static const std::vector<std::pair<ColorMap, std::string>> names{{ColorMap::Viridis, "viridis"},
        {ColorMap::Magma, "magma"}, {ColorMap::Grey, "grey"}, {ColorMap::CoolWarm, "cool-warm"}};
    return names;
}

std::array<uint8_t, 3> colorAt(ColorMap map, float t)
{
    const Anchors& a = anchors(map);
    const float x = std::clamp(std::isfinite(t) ? t : 0.0f, 0.0f, 1.0f) * static_cast<float>(a.size() - 1);
    const size_t i = std::min(static_cast<size_t>(x), a.size() - 2);
    const float f = x - static_cast<float>(i);
    std::array<uint8_t, 3> rgb{};
    for (size_t c = 0; c < 3; ++c)
        rgb[c] = static_cast<uint8_t>(std::lround(a[i][c] + f * (a[i + 1][c] - a[i][c])));
    return rgb;
}

} // namespace torchscope
