#include "views/attention_head_grid.h"

#include "common/float_tensor.h"
#include "maps/colormap.h"

#include <QMouseEvent>
#include <QPainter>

#include <algorithm>

namespace torchscope {
namespace {

constexpr int PreferredCell = 44;
constexpr int SmallestHeadCell = 16;
constexpr int LargestHeadCell = 64;
constexpr int Gap = 3;
constexpr int RowLabelWidth = 44;
constexpr int HeaderHeight = 18;

} // namespace

QImage mapImage(const FloatTensor& map)
{
    if (map.shape.size() != 2 || map.values.empty())
        return {};
    const auto [low, high] = std::minmax_element(map.values.begin(), map.values.end());
    const float range = *high - *low;
    QImage image(static_cast<int>(map.shape[1]), static_cast<int>(map.shape[0]), QImage::Format_RGB32);
    for (int y = 0; y < image.height(); ++y)
        for (int x = 0; x < image.width(); ++x) {
            const float v = map.values[static_cast<size_t>(y * image.width() + x)];
            const auto rgb = colorAt(ColorMap::Magma, range > 0 ? (v - *low) / range : 0.0f);
            image.setPixel(x, y, qRgb(rgb[0], rgb[1], rgb[2]));
        }
    return image;
}

AttentionHeadGrid::AttentionHeadGrid(QWidget* parent)
    : QWidget(parent)
{
    setMouseTracking(false);
}

void AttentionHeadGrid::setMaps(const std::vector<std::vector<FloatTensor>>& maps, const QStringList& rowNames)
{
    cells_.clear();
    for (const auto& layer : maps) {
        std::vector<QImage> row;
        for (const auto& head : layer)
            row.push_back(mapImage(head));
        cells_.push_back(std::move(row));
    }
    rowNames_ = rowNames;
    message_.clear();
    updateGeometry();
    update();
}

void AttentionHeadGrid::clear(const QString& message)
{
    cells_.clear();
    message_ = message;
    pickedLayer_ = pickedHead_ = -1;
    updateGeometry();
    update();
}

void AttentionHeadGrid::setPicked(int layer, int head)
{
    pickedLayer_ = layer;
    pickedHead_ = head;
    update();
}

int AttentionHeadGrid::cellSize() const
{
    if (cells_.empty())
        return PreferredCell;
    const int across = (width() - RowLabelWidth) / columns() - Gap;
    const int down = (height() - HeaderHeight) / rows() - Gap;
    return std::clamp(std::min(across, down), SmallestHeadCell, LargestHeadCell);
}

QRect AttentionHeadGrid::cellRect(int layer, int head) const
{
    const int cell = cellSize();
    return {RowLabelWidth + head * (cell + Gap), HeaderHeight + layer * (cell + Gap), cell, cell};
}

QPoint AttentionHeadGrid::cellCentre(int layer, int head) const
{
    return cellRect(layer, head).center();
}

QSize AttentionHeadGrid::sizeHint() const
{
    if (cells_.empty())
        return {360, 120};
    return {RowLabelWidth + columns() * (PreferredCell + Gap), HeaderHeight + rows() * (PreferredCell + Gap)};
}

QSize AttentionHeadGrid::minimumSizeHint() const
{
    if (cells_.empty())
        return {200, 80};
    return {RowLabelWidth + columns() * (SmallestHeadCell + Gap), HeaderHeight + rows() * (SmallestHeadCell + Gap)};
}

void AttentionHeadGrid::paintEvent(QPaintEvent*)
{
    QPainter painter(this);
    if (cells_.empty()) {
        painter.setPen(palette().color(QPalette::PlaceholderText));
        painter.drawText(rect().adjusted(8, 8, -8, -8), Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, message_);
        return;
    }
    painter.setPen(palette().color(QPalette::WindowText));
    // Head labels that fit their column: "h11", else "11", else every n-th ("h10h11" ran together).
    const int column = cellSize() + Gap;
    const QString widest = tr("h%1").arg(columns() - 1);
    const bool prefix = painter.fontMetrics().horizontalAdvance(widest) + 2 <= column;
    const int labelWidth
        = painter.fontMetrics().horizontalAdvance(prefix ? widest : QString::number(columns() - 1)) + 4;
    const int every = std::max(1, (labelWidth + column - 1) / column);
    for (int head = 0; head < columns(); head += every)
        painter.drawText(QRect(cellRect(0, head).left() + cellSize() / 2 - labelWidth / 2, 0, labelWidth, HeaderHeight),
            Qt::AlignCenter, prefix ? tr("h%1").arg(head) : QString::number(head));
    for (int layer = 0; layer < rows(); ++layer) {
        painter.drawText(QRect(0, cellRect(layer, 0).top(), RowLabelWidth - 4, cellSize()),
            Qt::AlignRight | Qt::AlignVCenter, layer < rowNames_.size() ? rowNames_[layer] : QString::number(layer));
        for (int head = 0; head < static_cast<int>(cells_[static_cast<size_t>(layer)].size()); ++head)
            painter.drawImage(cellRect(layer, head), cells_[static_cast<size_t>(layer)][static_cast<size_t>(head)]);
    }
    if (pickedLayer_ >= 0 && pickedLayer_ < rows() && pickedHead_ >= 0 && pickedHead_ < columns()) {
        painter.setPen(QPen(palette().color(QPalette::Highlight), 3));
        painter.drawRect(cellRect(pickedLayer_, pickedHead_).adjusted(-2, -2, 1, 1));
    }
}

void AttentionHeadGrid::mousePressEvent(QMouseEvent* event)
{
    for (int layer = 0; layer < rows(); ++layer)
        for (int head = 0; head < columns(); ++head)
            if (cellRect(layer, head).contains(event->pos())) {
                setPicked(layer, head);
                Q_EMIT cellClicked(layer, head);
                return;
            }
}

} // namespace torchscope
