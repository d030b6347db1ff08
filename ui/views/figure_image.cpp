#include "views/figure_image.h"

#include "views/color_bar.h"

#include <QPainter>

#include <algorithm>

namespace torchscope {

QImage figureImage(const QString& title, const QImage& picture, const ColorBar& scale)
{
    if (picture.isNull())
        return picture;
    const QImage bar = scale.image(std::max(200, std::min(picture.height(), 480)));
    QFont font;
    font.setPixelSize(14);
    const QFontMetrics metrics(font);
    const int margin = 10, titleHeight = metrics.height() + 2 * margin;
    QImage figure(std::max(picture.width() + bar.width() + 3 * margin, metrics.horizontalAdvance(title) + 2 * margin),
        titleHeight + std::max(picture.height(), bar.height()) + margin, QImage::Format_RGB32);
    figure.fill(Qt::white);
    QPainter painter(&figure);
    painter.setFont(font);
    painter.setPen(Qt::black);
    painter.drawText(QRect(margin, margin, figure.width() - 2 * margin, metrics.height()), Qt::AlignLeft, title);
    painter.drawImage(margin, titleHeight, picture);
    painter.drawImage(picture.width() + 2 * margin, titleHeight, bar);
    return figure;
}

} // namespace torchscope
