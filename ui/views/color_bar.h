#pragma once

#include "maps/colormap.h"

#include <QImage>
#include <QString>
#include <QWidget>

class QPainter;

namespace torchscope {

// The scale beside a map: the colour map from bottom (low) to top (high) with the values at both
// ends, zero marked when it lies inside, and a title that says what the scale is of.
class ColorBar : public QWidget {
    Q_OBJECT
public:
    explicit ColorBar(QWidget* parent = nullptr);

    void setScale(double low, double high, ColorMap colorMap, const QString& title);
    void clearScale();

    double low() const { return low_; }
    double high() const { return high_; }
    QString title() const { return title_; }
    // The bar as an image for exports: black on white, `height` pixels high, sizeHint's width.
    QImage image(int height) const;
    QSize sizeHint() const override { return {96, 240}; }
    QSize minimumSizeHint() const override { return {72, 120}; }

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    void paint(QPainter& painter, const QSize& size, const QColor& text) const;

    double low_ = 0.0;
    double high_ = 0.0;
    ColorMap colorMap_ = ColorMap::Viridis;
    QString title_;
    bool shown_ = false;
};

// A number for a scale label: 4 significant digits, without trailing noise.
QString scaleNumber(double value);

} // namespace torchscope
