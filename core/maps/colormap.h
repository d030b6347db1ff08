#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace torchscope {

// matplotlib's perceptually uniform maps, grey, and its diverging cool-warm (Moreland's) for signed
// values such as attributions, gradients and differences.
enum class ColorMap { Viridis, Magma, Inferno, Cividis, Grey, CoolWarm };

const std::vector<std::pair<ColorMap, std::string>>& colorMapNames();

// RGB of value t in [0, 1] (clamped; NaN is the low end), exactly as matplotlib's
// `cmap(t, bytes=True)` gives it: entry floor(t * 256) of the map's 256-entry table.
std::array<uint8_t, 3> colorAt(ColorMap map, float t);

} // namespace torchscope
