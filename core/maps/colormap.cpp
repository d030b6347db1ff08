#include "maps/colormap.h"

#include <algorithm>
#include <cmath>

namespace torchscope {
namespace {

using ColorTable = std::array<std::array<uint8_t, 3>, 256>;

#include "maps/colormap_tables.inc"

const ColorTable& tableOf(ColorMap map)
{
    switch (map) {
    case ColorMap::Viridis:
        return kViridis;
    case ColorMap::Magma:
        return kMagma;
    case ColorMap::Inferno:
        return kInferno;
    case ColorMap::Cividis:
        return kCividis;
    case ColorMap::Grey:
        return kGrey;
    case ColorMap::CoolWarm:
        return kCoolWarm;
    }
    return kViridis;
}

} // namespace

const std::vector<std::pair<ColorMap, std::string>>& colorMapNames()
{
    static const std::vector<std::pair<ColorMap, std::string>> names{{ColorMap::Viridis, "viridis"},
        {ColorMap::Magma, "magma"}, {ColorMap::Inferno, "inferno"}, {ColorMap::Cividis, "cividis"},
        {ColorMap::Grey, "grey"}, {ColorMap::CoolWarm, "cool-warm"}};
    return names;
}

std::array<uint8_t, 3> colorAt(ColorMap map, float t)
{
    const float clamped = std::clamp(std::isnan(t) ? 0.0f : t, 0.0f, 1.0f);
    // As matplotlib: t * N truncated, and t == 1 is the last entry. (t * 256 is exact in float.)
    const auto index = std::min(static_cast<size_t>(clamped * 256.0f), size_t{255});
    return tableOf(map)[index];
}

} // namespace torchscope
