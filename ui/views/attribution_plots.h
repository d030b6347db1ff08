#pragma once

// The Attribution tab's plots: the methods' mean deletion and insertion curves (the target's
// probability against the share of pixels changed), and the sanity check's similarity of each
// method's map to the original against the randomised layer, with the first image's randomised
// maps of one method in a row beneath.

#include "jobs/run_metatypes.h"

#include <QObject>

class QComboBox;
class QCustomPlot;
class QHBoxLayout;
class QLabel;
class QWidget;

namespace torchscope {

// Two pages for the caller's tabs (curvesPage, sanityPage); it takes them as its own.
class AttributionPlots : public QObject {
    Q_OBJECT
public:
    explicit AttributionPlots(QObject* parent = nullptr);

    QWidget* curvesPage() const;
    QWidget* sanityPage() const { return sanityPage_; }
    void setResult(const AttributionWorkbenchResultPtr& result);
    void clear();
    QCustomPlot* curvesPlot() const { return curves_; }
    QCustomPlot* sanityPlot() const { return sanity_; }

private:
    void drawCurves();
    void drawSanity();
    void drawRandomisedMaps();

    AttributionWorkbenchResultPtr result_;
    QCustomPlot* curves_;
    QCustomPlot* sanity_;
    QComboBox* mapsMethod_;
    QHBoxLayout* mapsRow_;
    QLabel* sanityNote_;
    QWidget* sanityPage_;
};

} // namespace torchscope
