#include "channel_grid.h"

#include <QMouseEvent>
#include <QPainter>

#include <algorithm>
#include <array>
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
    // One pass over the output pixels: each looks up its channel value (nearest neighbour).
    const int w = static_cast<int>(layout_.width), h = static_cast<int>(layout_.height);
    const int tileW = w * zoom_ + Gap, tileH = h * zoom_ + Gap;
    const int cols = columns();
    const int rows = static_cast<int>((layout_.channels + cols - 1) / cols);
    image_ = QImage(cols * tileW, rows * tileH, QImage::Format_RGB888);
    image_.fill(palette().color(QPalette::Window));
    std::array<std::array<uint8_t, 3>, 256> lut;
    for (int i = 0; i < 256; ++i)
        lut[static_cast<size_t>(i)] = colorAt(colorMap_, i / 255.0f);
    for (int y = 0; y < image_.height(); ++y) {
        const int row = y / tileH, my = (y % tileH) / zoom_;
        if (my >= h)
            continue;
        uchar* line = image_.scanLine(y);
        for (int col = 0; col < cols; ++col) {
            const int channel = row * cols + col;
            if (channel >= layout_.channels)
                break;
            const float* map = normalized_.data() + (static_cast<size_t>(channel) * h + my) * w;
            uchar* out = line + 3 * col * tileW;
            for (int x = 0; x < w * zoom_; ++x) {
                const auto& rgb = lut[static_cast<size_t>(std::clamp(map[x / zoom_], 0.f, 1.f) * 255.f + 0.5f)];
                out[3 * x] = rgb[0];
                out[3 * x + 1] = rgb[1];
                out[3 * x + 2] = rgb[2];
            }
        }
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
