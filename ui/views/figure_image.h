#pragma once

// A picture for an export that says what it shows: a title line over the image, its colour scale
// beside it, on white. The grid and overlay exports of the activation view use it.

#include <QImage>
#include <QPoint>
#include <QString>

namespace torchscope {

class ColorBar;

QImage figureImage(const QString& title, const QImage& picture, const ColorBar& scale);

// Where the parts sit: the picture's top-left corner, and the colour bar's left edge after it.
constexpr int FigureMargin = 10;
QPoint figurePictureOrigin();
inline int figureScaleLeft(int pictureWidth)
{
    return pictureWidth + 2 * FigureMargin;
}

} // namespace torchscope
