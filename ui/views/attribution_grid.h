#pragma once

// The Attribution tab's grid: the images (rows) × the methods (columns), each map over its image
// with the map's faithfulness values under it; a colour scale per method column, or each map on
// its own scale with its range under it.

#include "jobs/run_metatypes.h"

#include <QScrollArea>

class QGridLayout;

namespace torchscope {

class AttributionGrid : public QScrollArea {
    Q_OBJECT
public:
    explicit AttributionGrid(QWidget* parent = nullptr);

    void setResult(const AttributionWorkbenchResultPtr& result);
    void setSharedScale(bool shared); // one scale per method column (default) or each map its own
    void clear(const QString& message);
    int cellCount() const { return cells_; } // the maps drawn (for tests)

private:
    void rebuild();

    AttributionWorkbenchResultPtr result_;
    bool shared_ = true;
    int cells_ = 0;
    QString message_;
};

// Signed maps (some value below zero) are drawn in the diverging cool-warm map, symmetric about 0;
// the others in viridis from their low to their high.
struct MapScale {
    double low = 0.0, high = 0.0;
    bool diverging = false;
};
MapScale scaleOf(double low, double high);

} // namespace torchscope
