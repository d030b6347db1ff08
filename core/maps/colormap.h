#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace torchscope {

enum class ColorMap { Viridis, Magma, Grey, CoolWarm };

const std::vector<std::pair<ColorMap, std::string>>& colorMapNames();

// RGB of value t in [0, 1] (clamped), interpolated between the map's anchor colours
// (matplotlib's viridis and magma, Moreland's cool-warm for signed values such as gradients).
std::array<uint8_t, 3> colorAt(ColorMap map, float t);

} // namespace torchscope
