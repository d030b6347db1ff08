#pragma once

#include "maps/colormap.h"

#include <QImage>
#include <QString>

#include <vector>

namespace torchscope {

struct FloatTensor;

// A map (height x width values in [0, 1]) upsampled and blended over a picture ([H, W, 3] in
// [0, 1]) in a colour map; alpha 0 or no map shows the picture only.
QImage overlayImage(
    const FloatTensor& picture, const float* map, int64_t mapWidth, int64_t mapHeight, ColorMap colorMap, float alpha);

// The map's values with `low` drawn as 0 and `high` as 1 (all 0 when high <= low): what
// overlayImage takes, the colour bar showing low … high.
std::vector<float> scaledToUnit(const FloatTensor& map, double low, double high);

// An image file as a picture [H, W, 3] in [0, 1], at most `side` pixels on its longer side; empty
// when it does not read.
FloatTensor pictureFromFile(const QString& path, int side);

} // namespace torchscope
