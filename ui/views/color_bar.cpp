#include "views/color_bar.h"

#include <QPainter>

namespace torchscope {

QString scaleNumber(double value)
{
    return QString::number(value, 'g', 4);
}

ColorBar::ColorBar(QWidget* parent)
    : QWidget(parent)
{
    setSizePolicy(QSizePolicy::Fixed, QSizePolicy::Expanding);
    setFixedWidth(96);
}

void ColorBar::setScale(double low, double high, ColorMap colorMap, const QString& title)
{
    low_ = low;
    high_ = high;
    colorMap_ = colorMap;
    title_ = title;
    shown_ = true;
    setToolTip(tr("%1: %2 … %3").arg(title, scaleNumber(low), scaleNumber(high)));
    update();
}

void ColorBar::clearScale()
{
    shown_ = false;
    setToolTip({});
    update();
}

void ColorBar::paintEvent(QPaintEvent*)
{
    if (!shown_)
        return;
    QPainter painter(this);
    paint(painter, size(), palette().color(QPalette::WindowText));
}

QImage ColorBar::image(int height) const
{
    QImage image(sizeHint().width(), height, QImage::Format_RGB32);
    image.fill(Qt::white);
    if (shown_) {
        QPainter painter(&image);
        painter.setFont(font());
        paint(painter, image.size(), Qt::black);
    }
    return image;
}

void ColorBar::paint(QPainter& painter, const QSize& size, const QColor& text) const
{
    const int width = size.width(), height = size.height();
    painter.setPen(text);
    const QFontMetrics metrics = painter.fontMetrics();
    const int line = metrics.height();
    // The title above (wrapped into the bar's width), then the bar with its numbers to the right.
    const QRect titleRect(0, 0, width, 3 * line);
    painter.drawText(titleRect, Qt::AlignHCenter | Qt::AlignTop | Qt::TextWordWrap, title_);
    const int top = titleRect.bottom() + line / 2, bottom = height - line;
    if (bottom - top < 16)
        return;
    const QRect bar(4, top, 16, bottom - top);
    for (int y = bar.top(); y <= bar.bottom(); ++y) {
        const float t = float(bar.bottom() - y) / std::max(1, bar.height() - 1);
        const auto rgb = colorAt(colorMap_, t);
        painter.setPen(QColor(rgb[0], rgb[1], rgb[2]));
        painter.drawLine(bar.left(), y, bar.right(), y);
    }
    painter.setPen(text);
    painter.drawRect(bar.adjusted(0, 0, -1, -1));
    const int textX = bar.right() + 4;
    auto label = [&](double value, int y) {
        painter.drawLine(bar.right(), y, bar.right() + 2, y);
        painter.drawText(
            QRect(textX, y - line / 2, width - textX, line), Qt::AlignLeft | Qt::AlignVCenter, scaleNumber(value));
    };
    label(high_, bar.top());
    label(low_, bar.bottom());
    if (high_ > low_) {
        const auto at
            = [&](double value) { return bar.bottom() - int((value - low_) / (high_ - low_) * bar.height()); };
        if (low_ < 0 && high_ > 0 && at(0) - bar.top() > line && bar.bottom() - at(0) > line)
            label(0.0, at(0));
        const double middle = (low_ + high_) / 2;
        if (!(low_ < 0 && high_ > 0) && at(middle) - bar.top() > 2 * line)
            label(middle, at(middle));
    }
}

} // namespace torchscope
