#pragma once

// The Attention tab's grid: a row per attention layer, a column per head, each cell one head's
// attention of the query token over the image's patches (magma, each map on its own scale so that
// every head's pattern shows). The cells grow and shrink with the widget (16 to 64 pixels).
// Clicking a cell picks it; the picked cell is outlined.

#include <QStringList>
#include <QWidget>

#include <vector>

namespace torchscope {

struct FloatTensor;

class AttentionHeadGrid : public QWidget {
    Q_OBJECT
public:
    explicit AttentionHeadGrid(QWidget* parent = nullptr);

    // maps[layer][head]: [h, w]; rowNames: one per layer.
    void setMaps(const std::vector<std::vector<FloatTensor>>& maps, const QStringList& rowNames);
    void clear(const QString& message);
    void setPicked(int layer, int head);
    int rows() const { return static_cast<int>(cells_.size()); }
    int columns() const { return cells_.empty() ? 0 : static_cast<int>(cells_.front().size()); }
    // The centre of a cell in widget coordinates (for tests and scripted clicks).
    QPoint cellCentre(int layer, int head) const;

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

Q_SIGNALS:
    void cellClicked(int layer, int head);

protected:
    void paintEvent(QPaintEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;

private:
    QRect cellRect(int layer, int head) const;
    int cellSize() const;

    std::vector<std::vector<QImage>> cells_;
    QStringList rowNames_;
    QString message_;
    int pickedLayer_ = -1, pickedHead_ = -1;
};

// A [h, w] map as a magma image from its minimum to its maximum.
QImage mapImage(const FloatTensor& map);

} // namespace torchscope
