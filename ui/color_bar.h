#pragma once

#include "imaging/colormap.h"

#include <QString>
#include <QWidget>

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
    QSize sizeHint() const override { return {96, 240}; }
    QSize minimumSizeHint() const override { return {72, 120}; }

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    double low_ = 0.0;
    double high_ = 0.0;
    ColorMap colorMap_ = ColorMap::Viridis;
    QString title_;
    bool shown_ = false;
};

// A number for a scale label: 4 significant digits, without trailing noise.
QString scaleNumber(double value);

} // namespace torchscope
