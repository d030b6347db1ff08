#pragma once

#include "common/float_tensor.h"
#include "maps/channel_maps.h"

#include <QImage>
#include <QWidget>

class QPainter;

namespace torchscope {

// A layer's channel maps for one image as a grid of small pictures, each numbered (when tiles are
// large enough) and marked when constant; hovering shows the value under the pointer. Click a
// tile to pick its channel. Draws only: the scaling to [0, 1] is core's normalizeChannelMaps().
class ChannelGrid : public QWidget {
    Q_OBJECT
public:
    explicit ChannelGrid(QWidget* parent = nullptr);

    void setMaps(const FloatTensor& maps, Contrast contrast, ColorMap colorMap);
    // Every channel on the scale low … high (shared with another grid).
    void setMaps(const FloatTensor& maps, float low, float high, ColorMap colorMap);
    // The numbers the tiles show and hover names, when they are a selection of a layer's channels
    // (ranked); empty: 0, 1, 2 ...
    void setChannelNumbers(const std::vector<int64_t>& numbers);
    void setZoom(int pixelsPerValue);
    void setSelectedChannel(int channel);

    int channelCount() const { return static_cast<int>(layout_.channels); }
    // The values drawn at the bottom and top of the colour map for a channel.
    ChannelRange channelRange(int channel) const;
    // A channel's map as drawn (height x width values in [0, 1]); null for no such channel.
    const float* drawnMap(int channel) const;
    // "channel 12 at (3, 5): 0.731 (channel 0 … 2.4)", or "" off the tiles.
    QString describeAt(const QPoint& position) const;
    QSize mapSize() const { return QSize(static_cast<int>(layout_.width), static_cast<int>(layout_.height)); }
    const QImage& image() const { return image_; }
    // The grid for an export: every tile numbered (where a number fits at all), constant channels
    // crossed, no selection mark.
    QImage figureImage() const;
    QSize sizeHint() const override { return image_.size(); }

Q_SIGNALS:
    void channelPicked(int channel);
    // Right-click on a tile: the layer's channel number (not the tile's place in a ranking).
    void channelPageRequested(int64_t channel);

protected:
    void paintEvent(QPaintEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void contextMenuEvent(QContextMenuEvent* event) override;
    bool event(QEvent* event) override; // tool tips
    void resizeEvent(QResizeEvent* event) override;

private:
    void render();
    void paintMarks(QPainter& painter, int minimumTileWidth, int minimumTileHeight) const;
    int columns() const;
    int channelAt(const QPoint& position, int* y = nullptr, int* x = nullptr) const;
    int64_t numberOf(int tile) const;
    void setNormalized(const FloatTensor& maps, NormalizedMaps normalized, ColorMap colorMap);

    FloatTensor maps_;
    NormalizedMaps normalized_;
    MapLayout layout_;
    ColorMap colorMap_ = ColorMap::Viridis;
    int zoom_ = 4;
    int selected_ = -1;
    std::vector<int64_t> numbers_;
    QImage image_;
    static constexpr int Gap = 2;
};

} // namespace torchscope
