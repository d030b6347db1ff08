#include "channel_grid.h"

#include <QMouseEvent>
#include <QPainter>

#include <algorithm>
#include <cmath>

namespace torchscope {

ChannelGrid::ChannelGrid(QWidget* parent)
    : QWidget(parent)
{
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
}

void ChannelGrid::setMaps(const FloatTensor& maps, Contrast contrast, ColorMap colorMap)
{
    layout_ = mapLayout(maps.shape);
    normalized_ = normalizeChannels(maps, contrast);
    colorMap_ = colorMap;
    if (selected_ >= layout_.channels)
        selected_ = -1;
    render();
}

void ChannelGrid::setZoom(int pixelsPerValue)
{
    zoom_ = std::max(1, pixelsPerValue);
    render();
}

void ChannelGrid::setSelectedChannel(int channel)
{
    selected_ = channel;
    update();
}

int ChannelGrid::columns() const
{
    const int tile = static_cast<int>(layout_.width) * zoom_ + Gap;
    return std::max(1, std::min(static_cast<int>(layout_.channels), std::max(1, width()) / std::max(1, tile)));
}

void ChannelGrid::render()
{
    if (normalized_.empty() || layout_.channels == 0) {
        image_ = QImage();
        updateGeometry();
        update();
        return;
    }
    const int w = static_cast<int>(layout_.width), h = static_cast<int>(layout_.height);
    const int cols = columns();
    const int rows = static_cast<int>((layout_.channels + cols - 1) / cols);
    image_ = QImage(cols * (w * zoom_ + Gap), rows * (h * zoom_ + Gap), QImage::Format_RGB888);
    image_.fill(palette().color(QPalette::Window));
    for (int c = 0; c < layout_.channels; ++c) {
        QImage tile(w, h, QImage::Format_RGB888);
        const float* map = normalized_.data() + static_cast<size_t>(c) * w * h;
        for (int y = 0; y < h; ++y) {
            uchar* line = tile.scanLine(y);
            for (int x = 0; x < w; ++x) {
                const auto rgb = colorAt(colorMap_, map[y * w + x]);
                std::copy(rgb.begin(), rgb.end(), line + 3 * x);
            }
        }
        QPainter painter(&image_);
        painter.drawImage(
            QPoint((c % cols) * (w * zoom_ + Gap), (c / cols) * (h * zoom_ + Gap)), tile.scaled(w * zoom_, h * zoom_));
    }
    setMinimumHeight(image_.height());
    updateGeometry();
    update();
}

void ChannelGrid::paintEvent(QPaintEvent*)
{
    QPainter painter(this);
    painter.drawImage(0, 0, image_);
    if (selected_ >= 0 && !image_.isNull()) {
        const int cols = columns();
        const int tw = static_cast<int>(layout_.width) * zoom_, th = static_cast<int>(layout_.height) * zoom_;
        painter.setPen(QPen(palette().color(QPalette::Highlight), 2));
        painter.drawRect((selected_ % cols) * (tw + Gap), (selected_ / cols) * (th + Gap), tw, th);
    }
}

void ChannelGrid::mousePressEvent(QMouseEvent* event)
{
    if (image_.isNull())
        return;
    const int tw = static_cast<int>(layout_.width) * zoom_ + Gap, th = static_cast<int>(layout_.height) * zoom_ + Gap;
    const int channel = (event->pos().y() / th) * columns() + event->pos().x() / tw;
    if (event->pos().x() / tw < columns() && channel < layout_.channels) {
        setSelectedChannel(channel);
        Q_EMIT channelPicked(channel);
    }
}

void ChannelGrid::resizeEvent(QResizeEvent* event)
{
    QWidget::resizeEvent(event);
    if (!image_.isNull() && columns() * (layout_.width * zoom_ + Gap) != image_.width())
        render();
}

} // namespace torchscope
