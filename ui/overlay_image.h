#pragma once

#include "maps/colormap.h"

#include <QImage>

namespace torchscope {

struct FloatTensor;

// A map (height x width values in [0, 1]) upsampled and blended over a picture ([H, W, 3] in
// [0, 1]) in a colour map; alpha 0 or no map shows the picture only.
QImage overlayImage(
    const FloatTensor& picture, const float* map, int64_t mapWidth, int64_t mapHeight, ColorMap colorMap, float alpha);

} // namespace torchscope
