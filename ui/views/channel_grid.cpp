#include "views/channel_grid.h"

#include <QContextMenuEvent>
#include <QMenu>

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

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
    setNormalized(maps, normalizeChannelMaps(maps, contrast), colorMap);
}

void ChannelGrid::setMaps(const FloatTensor& maps, float low, float high, ColorMap colorMap)
{
    setNormalized(maps, normalizeChannelMaps(maps, low, high), colorMap);
}

void ChannelGrid::setChannelNumbers(const std::vector<int64_t>& numbers)
{
    numbers_ = numbers;
    update();
}

int64_t ChannelGrid::numberOf(int tile) const
{
    return tile >= 0 && static_cast<size_t>(tile) < numbers_.size() ? numbers_[static_cast<size_t>(tile)] : tile;
}

void ChannelGrid::setNormalized(const FloatTensor& maps, NormalizedMaps normalized, ColorMap colorMap)
{
    layout_ = mapLayout(maps.shape);
    maps_ = maps;
    normalized_ = std::move(normalized);
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
    if (normalized_.values.empty() || layout_.channels == 0) {
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
            const float* map = normalized_.values.data() + (static_cast<size_t>(channel) * h + my) * w;
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

ChannelRange ChannelGrid::channelRange(int channel) const
{
    if (channel < 0 || channel >= static_cast<int>(normalized_.channels.size()))
        return {};
    return normalized_.channels[static_cast<size_t>(channel)];
}

const float* ChannelGrid::drawnMap(int channel) const
{
    if (channel < 0 || channel >= layout_.channels)
        return nullptr;
    return normalized_.values.data() + static_cast<size_t>(channel) * layout_.height * layout_.width;
}

int ChannelGrid::channelAt(const QPoint& position, int* y, int* x) const
{
    if (image_.isNull() || position.x() < 0 || position.y() < 0)
        return -1;
    const int tw = static_cast<int>(layout_.width) * zoom_ + Gap, th = static_cast<int>(layout_.height) * zoom_ + Gap;
    const int column = position.x() / tw, row = position.y() / th;
    const int channel = row * columns() + column;
    const int inX = (position.x() % tw) / zoom_, inY = (position.y() % th) / zoom_;
    if (column >= columns() || channel >= layout_.channels || inX >= layout_.width || inY >= layout_.height)
        return -1;
    if (y)
        *y = inY;
    if (x)
        *x = inX;
    return channel;
}

QString ChannelGrid::describeAt(const QPoint& position) const
{
    int y = 0, x = 0;
    const int channel = channelAt(position, &y, &x);
    if (channel < 0)
        return {};
    const size_t index = (static_cast<size_t>(channel) * layout_.height + y) * layout_.width + x;
    const ChannelRange range = channelRange(channel);
    QString text
        = tr("channel %1 at (%2, %3): %4").arg(numberOf(channel)).arg(y).arg(x).arg(maps_.values[index], 0, 'g', 5);
    text += range.constant ? tr(" (constant channel)")
                           : tr(" (scale %1 … %2)").arg(range.low, 0, 'g', 4).arg(range.high, 0, 'g', 4);
    return text;
}

bool ChannelGrid::event(QEvent* event)
{
    if (event->type() == QEvent::ToolTip) {
        const auto* help = static_cast<QHelpEvent*>(event);
        const QString text = describeAt(help->pos());
        if (text.isEmpty())
            QToolTip::hideText();
        else
            QToolTip::showText(help->globalPos(), text, this);
        return true;
    }
    return QWidget::event(event);
}

void ChannelGrid::paintEvent(QPaintEvent*)
{
    QPainter painter(this);
    painter.drawImage(0, 0, image_);
    if (image_.isNull())
        return;
    QFont font = painter.font();
    font.setPointSizeF(std::max(6.0, font.pointSizeF() * 0.75));
    painter.setFont(font);
    const QFontMetrics metrics(font);
    paintMarks(painter, metrics.horizontalAdvance("0000") + 4, 2 * metrics.height());
    if (selected_ >= 0 && selected_ < layout_.channels) {
        const int cols = columns();
        const int tw = static_cast<int>(layout_.width) * zoom_, th = static_cast<int>(layout_.height) * zoom_;
        painter.setPen(QPen(palette().color(QPalette::Highlight), 2));
        painter.drawRect(QRect((selected_ % cols) * (tw + Gap), (selected_ / cols) * (th + Gap), tw, th));
    }
}

QImage ChannelGrid::figureImage() const
{
    QImage figure = image_.convertToFormat(QImage::Format_RGB32);
    if (figure.isNull())
        return figure;
    QPainter painter(&figure);
    QFont font = painter.font();
    font.setPixelSize(std::clamp(static_cast<int>(layout_.height) * zoom_ / 3, 7, 11));
    painter.setFont(font);
    const QFontMetrics metrics(font);
    paintMarks(painter, metrics.horizontalAdvance("00") + 2, metrics.height());
    return figure;
}

// Crosses over constant channels, and the channel numbers on tiles of at least the given size.
void ChannelGrid::paintMarks(QPainter& painter, int minimumTileWidth, int minimumTileHeight) const
{
    const int cols = columns();
    const int tw = static_cast<int>(layout_.width) * zoom_, th = static_cast<int>(layout_.height) * zoom_;
    const auto tile
        = [&](int channel) { return QRect((channel % cols) * (tw + Gap), (channel / cols) * (th + Gap), tw, th); };
    // Constant channels: crossed out, so "no contrast" does not read as "uniform activation".
    painter.setPen(QPen(QColor(255, 255, 255, 150), 1, Qt::DashLine));
    for (int c = 0; c < layout_.channels; ++c) {
        if (!normalized_.channels[static_cast<size_t>(c)].constant || tw < 8 || th < 8)
            continue;
        const QRect r = tile(c);
        painter.drawLine(r.topLeft(), r.bottomRight());
        painter.drawLine(r.bottomLeft(), r.topRight());
    }
    // Channel numbers where a tile has room for them.
    const QFontMetrics metrics(painter.font());
    if (tw >= minimumTileWidth && th >= minimumTileHeight) {
        for (int c = 0; c < layout_.channels; ++c) {
            const QRect r = tile(c);
            const QString number = QString::number(numberOf(c));
            const QRect label(r.left(), r.top(), metrics.horizontalAdvance(number) + 4, metrics.height());
            painter.fillRect(label, QColor(0, 0, 0, 140));
            painter.setPen(Qt::white);
            painter.drawText(label, Qt::AlignCenter, number);
        }
    }
}

void ChannelGrid::mousePressEvent(QMouseEvent* event)
{
    const int channel = channelAt(event->pos());
    if (channel >= 0) {
        setSelectedChannel(channel);
        Q_EMIT channelPicked(channel);
    }
}

void ChannelGrid::contextMenuEvent(QContextMenuEvent* event)
{
    const int tile = channelAt(event->pos());
    if (tile < 0)
        return;
    const int64_t channel = numberOf(tile);
    QMenu menu(this);
    menu.addAction(tr("Channel page for channel %1…").arg(channel), this,
        [this, channel] { Q_EMIT channelPageRequested(channel); });
    menu.exec(event->globalPos());
}

void ChannelGrid::resizeEvent(QResizeEvent* event)
{
    QWidget::resizeEvent(event);
    if (!image_.isNull() && columns() * (layout_.width * zoom_ + Gap) != image_.width())
        render();
}

} // namespace torchscope
