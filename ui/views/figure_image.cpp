#include "views/figure_image.h"

#include "views/color_bar.h"

#include <QPainter>

#include <algorithm>

namespace torchscope {

namespace {

QFont titleFont()
{
    QFont font;
    font.setPixelSize(14);
    return font;
}

} // namespace

QPoint figurePictureOrigin()
{
    return {FigureMargin, QFontMetrics(titleFont()).height() + 2 * FigureMargin};
}

QImage figureImage(const QString& title, const QImage& picture, const ColorBar& scale)
{
    if (picture.isNull())
        return picture;
    const QImage bar = scale.image(std::max(200, std::min(picture.height(), 480)));
    const QFont font = titleFont();
    const QFontMetrics metrics(font);
    const int margin = FigureMargin, titleHeight = figurePictureOrigin().y();
    QImage figure(std::max(picture.width() + bar.width() + 3 * margin, metrics.horizontalAdvance(title) + 2 * margin),
        titleHeight + std::max(picture.height(), bar.height()) + margin, QImage::Format_RGB32);
    figure.fill(Qt::white);
    QPainter painter(&figure);
    painter.setFont(font);
    painter.setPen(Qt::black);
    painter.drawText(QRect(margin, margin, figure.width() - 2 * margin, metrics.height()), Qt::AlignLeft, title);
    painter.drawImage(margin, titleHeight, picture);
    painter.drawImage(figureScaleLeft(picture.width()), titleHeight, bar);
    return figure;
}

} // namespace torchscope
