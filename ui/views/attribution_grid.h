#pragma once

// The Attribution tab's grid: the images (rows) × the methods (columns), each map over its image
// with the map's faithfulness values under it; a colour scale per method column, or each map on
// its own scale with its range under it. The maps shrink (down to 96 pixels) so that every method's
// column fits the tab's width; past that the grid scrolls.

#include "common/float_tensor.h"
#include "jobs/run_metatypes.h"

#include <QScrollArea>

#include <vector>

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

    int cellSize() const { return cellSize_; } // a map's side in pixels

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    void rebuild();
    int fittingCellSize() const;

    AttributionWorkbenchResultPtr result_;
    bool shared_ = true;
    int cells_ = 0;
    int cellSize_ = 168;
    QString message_;
};

// Signed maps (some value below zero) are drawn in the diverging cool-warm map, symmetric about 0;
// the others in viridis from their low to their high.
struct MapScale {
    double low = 0.0, high = 0.0;
    bool diverging = false;
};
MapScale scaleOf(double low, double high);
// A method's scale over all its maps as Captum's visualize_image_attr draws them (outlier_perc=2):
// up to the 98th percentile of the values (of |value| for signed maps), which saturate above it, so
// one outlier pixel of a saliency map does not push every other pixel to the bottom colour.
MapScale sharedScaleOf(const std::vector<const FloatTensor*>& maps);

} // namespace torchscope
