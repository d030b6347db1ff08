#pragma once

// The Compare tab's two plots, drawing a CompareResult: the CKA heat map (A's layers down, B's
// across; hover shows the value, a click picks the pair) and the per-layer drift plot.

#include "compare/comparison.h"

#include <QWidget>

class QCustomPlot;
class QCPColorMap;
class QCPColorScale;

namespace torchscope {

class CkaHeatMap : public QWidget {
    Q_OBJECT
public:
    explicit CkaHeatMap(QWidget* parent = nullptr);

    void show(const CompareResult& result);
    void clear();
    QCustomPlot* plot() const { return plot_; }
    // "A features.1 × B features.2: CKA 0.913", or "" off the cells.
    QString describeAt(const QPointF& position) const;
    // The cell under a point in plot coordinates: row (A) and column (B), or false.
    bool cellAt(const QPointF& position, int* row, int* column) const;
    QPointF cellCentre(int row, int column) const; // in plot pixels

Q_SIGNALS:
    void pairPicked(const QString& layerA, const QString& layerB);

private:
    QCustomPlot* plot_;
    QCPColorMap* map_;
    QCPColorScale* scale_;
    CompareResult result_;
};

class DriftPlot : public QWidget {
    Q_OBJECT
public:
    explicit DriftPlot(QWidget* parent = nullptr);

    // Checkpoints: CKA and cosine per layer; Precision: relative L2 error per precision (log scale).
    void show(const CompareResult& result);
    void clear();
    QCustomPlot* plot() const { return plot_; }
    int graphCount() const;

private:
    QCustomPlot* plot_;
};

} // namespace torchscope
