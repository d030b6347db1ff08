#include "views/prediction_picture.h"

#include "views/overlay_image.h"

#include <QPainter>

#include <algorithm>

namespace torchscope {

QColor classColour(int64_t classIndex)
{
    // Golden-angle hues: neighbouring class indices get far-apart colours.
    const int hue = static_cast<int>((classIndex * 137) % 360);
    return QColor::fromHsv(hue, 200, 230);
}

QImage classMapPicture(const FloatTensor& picture, const FloatTensor& classMap, float alpha)
{
    QImage image = overlayImage(picture, nullptr, 0, 0, ColorMap::Viridis, 0.f);
    if (image.isNull() || classMap.shape.size() != 2 || classMap.shape[0] != image.height()
        || classMap.shape[1] != image.width())
        return image;
    image = image.convertToFormat(QImage::Format_RGB32);
    for (int y = 0; y < image.height(); ++y) {
        auto* line = reinterpret_cast<QRgb*>(image.scanLine(y));
        for (int x = 0; x < image.width(); ++x) {
            const auto c = static_cast<int64_t>(classMap.values[static_cast<size_t>(y * image.width() + x)]);
            if (c == 0)
                continue;
            const QColor colour = classColour(c);
            const QRgb p = line[x];
            line[x] = qRgb(static_cast<int>((1 - alpha) * qRed(p) + alpha * colour.red()),
                static_cast<int>((1 - alpha) * qGreen(p) + alpha * colour.green()),
                static_cast<int>((1 - alpha) * qBlue(p) + alpha * colour.blue()));
        }
    }
    return image;
}

QImage detectionPicture(const FloatTensor& picture, const std::vector<DetectionBox>& boxes, double scale)
{
    QImage base = overlayImage(picture, nullptr, 0, 0, ColorMap::Viridis, 0.f);
    if (base.isNull())
        return base;
    QImage image = base.scaled(base.size() * scale, Qt::KeepAspectRatio, Qt::SmoothTransformation)
                       .convertToFormat(QImage::Format_RGB32);
    QPainter painter(&image);
    painter.setRenderHint(QPainter::Antialiasing);
    QFont font = painter.font();
    font.setPixelSize(std::max(10, static_cast<int>(11 * std::max(1.0, scale / 2))));
    painter.setFont(font);
    // Lowest scores first, so the best boxes are drawn on top.
    for (auto it = boxes.rbegin(); it != boxes.rend(); ++it) {
        const QRectF rect(it->x0 * scale, it->y0 * scale, (it->x1 - it->x0) * scale, (it->y1 - it->y0) * scale);
        const QColor colour = classColour(it->label);
        painter.setPen(QPen(colour, 2));
        painter.setBrush(Qt::NoBrush);
        painter.drawRect(rect);
        const QString text = QString("%1 %2").arg(QString::fromStdString(it->labelText)).arg(it->score, 0, 'f', 2);
        const QRectF label = painter.fontMetrics().boundingRect(text).adjusted(-2, 0, 2, 0);
        const QRectF tag(rect.topLeft() - QPointF(0, label.height()), label.size());
        painter.fillRect(tag.translated(0, tag.top() < 0 ? label.height() : 0), colour);
        painter.setPen(Qt::black);
        painter.drawText(tag.translated(0, tag.top() < 0 ? label.height() : 0), Qt::AlignCenter, text);
    }
    return image;
}

} // namespace torchscope
