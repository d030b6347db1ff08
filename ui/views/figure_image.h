#pragma once

// A picture for an export that says what it shows: a title line over the image, its colour scale
// beside it, on white. The grid and overlay exports of the activation view use it.

#include <QImage>
#include <QString>

namespace torchscope {

class ColorBar;

QImage figureImage(const QString& title, const QImage& picture, const ColorBar& scale);

} // namespace torchscope
