#include "views/compare_plots.h"

#include "maps/colormap.h"
#include "views/empty_plot.h"
#include "views/plot_colours.h"
#include "views/plot_legend.h"
#include "views/qcustomplot_include.h"

#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace torchscope {
namespace {

// A tick per layer, named, where the names fit along `pixels` of axis; else a named tick every
// n-th layer (231 layers on 900 pixels: every 5th), so the labels never run into one block. The
// axis title says which (`title`, with " (every n-th named, N in all)").
QSharedPointer<QCPAxisTickerText> layerTicks(
    const std::vector<std::string>& layers, int pixels, const QFontMetrics& font, QString* title)
{
    const int each = font.height() + 2; // rotated labels stand a line apart
    const size_t fit = static_cast<size_t>(std::max(2, pixels / each));
    const size_t every = std::max<size_t>(1, (layers.size() + fit - 1) / fit);
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    for (size_t i = 0; i < layers.size(); i += every) {
        QString name = QString::fromStdString(layers[i]);
        name = font.elidedText(name, Qt::ElideMiddle, 28 * font.averageCharWidth()); // long paths keep both ends
        ticker->addTick(static_cast<double>(i), name);
    }
    if (every > 1 && title)
        *title += QObject::tr(" (one name per %1 layers, %2 in all)").arg(every).arg(layers.size());
    return ticker;
}

// The views' viridis (core/maps), so the heat map reads like the channel maps.
QCPColorGradient viridis()
{
    QCPColorGradient gradient;
    gradient.clearColorStops();
    for (int i = 0; i <= 16; ++i) {
        const auto rgb = colorAt(ColorMap::Viridis, i / 16.0f);
        gradient.setColorStopAt(i / 16.0, QColor(rgb[0], rgb[1], rgb[2]));
    }
    return gradient;
}

} // namespace

CkaHeatMap::CkaHeatMap(QWidget* parent)
    : QWidget(parent)
    , plot_(new QCustomPlot)
    , map_(new QCPColorMap(plot_->xAxis, plot_->yAxis))
    , scale_(new QCPColorScale(plot_))
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(plot_);
    plot_->setMinimumSize(320, 260);
    plot_->plotLayout()->addElement(0, 1, scale_);
    scale_->setDataRange(QCPRange(0, 1));
    scale_->axis()->setLabel(tr("linear CKA"));
    map_->setColorScale(scale_);
    map_->setGradient(viridis());
    map_->setInterpolate(false);
    map_->setDataRange(QCPRange(0, 1));
    // Row 0 (A's first layer) at the top, as in a matrix.
    plot_->yAxis->setRangeReversed(true);
    // Rotated back (-45°): each name ends at its tick, so the last one is not cut off at the right.
    plot_->xAxis->setTickLabelRotation(-45);
    plot_->xAxis->setLabel(tr("model B"));
    plot_->yAxis->setLabel(tr("model A"));
    auto* margins = new QCPMarginGroup(plot_);
    plot_->axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
    scale_->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
    connect(plot_, &QCustomPlot::mouseMove, this, [this](QMouseEvent* event) {
        const QString text = describeAt(event->position());
        if (text.isEmpty())
            QToolTip::hideText();
        else
            QToolTip::showText(event->globalPosition().toPoint(), text, plot_);
    });
    connect(plot_, &QCustomPlot::mousePress, this, [this](QMouseEvent* event) {
        int row = 0, column = 0;
        if (event->button() == Qt::LeftButton && cellAt(event->position(), &row, &column))
            Q_EMIT pairPicked(QString::fromStdString(result_.layersA[static_cast<size_t>(row)]),
                QString::fromStdString(result_.layersB[static_cast<size_t>(column)]));
    });
    clear();
}

void CkaHeatMap::clear()
{
    result_ = {};
    map_->data()->clear();
    plot_->xAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
    plot_->yAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
    plot_->xAxis->setTickLabels(false); // no "8·10^-1" on an empty map
    plot_->yAxis->setTickLabels(false);
    plot_->xAxis->setRange(0, 1);
    plot_->yAxis->setRange(0, 1);
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

void CkaHeatMap::show(const CompareResult& result)
{
    result_ = result;
    const int columns = static_cast<int>(result.layersB.size());
    const int rows = static_cast<int>(result.layersA.size());
    if (result.cka.empty() || rows == 0 || columns == 0) {
        clear();
        return;
    }
    map_->data()->setSize(columns, rows);
    map_->data()->setRange(QCPRange(0, std::max(1, columns - 1)), QCPRange(0, std::max(1, rows - 1)));
    if (columns == 1 || rows == 1) // QCustomPlot needs a range of non-zero width
        map_->data()->setRange(
            QCPRange(0, columns == 1 ? 1e-9 : columns - 1), QCPRange(0, rows == 1 ? 1e-9 : rows - 1));
    for (int i = 0; i < rows; ++i)
        for (int j = 0; j < columns; ++j) {
            const double value = result.ckaAt(static_cast<size_t>(i), static_cast<size_t>(j));
            map_->data()->setCell(j, i, std::isnan(value) ? 0.0 : value);
            map_->data()->setAlpha(j, i, std::isnan(value) ? 40 : 255); // a constant layer: no CKA
        }
    // The colour scale starts at the lowest value (rounded down to 0.05): CKA of related layers
    // sits near 1, and 0 … 1 would leave the differences in one shade.
    double lowest = 1.0;
    for (const double value : result.cka)
        if (!std::isnan(value))
            lowest = std::min(lowest, value);
    const double low = std::min(0.95, std::floor(std::max(0.0, lowest) * 20.0) / 20.0);
    map_->setDataRange(QCPRange(low, 1.0));
    scale_->setDataRange(QCPRange(low, 1.0));
    const bool twoModels = result.modelA != result.modelB;
    QString xTitle = twoModels ? tr("model B: %1").arg(QFileInfo(QString::fromStdString(result.modelB)).fileName())
                               : tr("the model's layers");
    QString yTitle = twoModels ? tr("model A: %1").arg(QFileInfo(QString::fromStdString(result.modelA)).fileName())
                               : tr("the model's layers");
    const QFontMetrics font(plot_->xAxis->tickLabelFont());
    plot_->xAxis->setTicker(layerTicks(result.layersB, std::max(plot_->width() - 260, 100), font, &xTitle));
    plot_->yAxis->setTicker(layerTicks(result.layersA, std::max(plot_->height() - 160, 100), font, &yTitle));
    plot_->xAxis->setTickLabels(true);
    plot_->yAxis->setTickLabels(true);
    plot_->xAxis->setRange(-0.5, columns - 0.5);
    plot_->yAxis->setRange(-0.5, rows - 0.5);
    plot_->xAxis->setLabel(xTitle);
    plot_->yAxis->setLabel(yTitle);
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

bool CkaHeatMap::cellAt(const QPointF& position, int* row, int* column) const
{
    if (result_.cka.empty() || !plot_->axisRect()->rect().contains(position.toPoint()))
        return false;
    const int j = static_cast<int>(std::lround(plot_->xAxis->pixelToCoord(position.x())));
    const int i = static_cast<int>(std::lround(plot_->yAxis->pixelToCoord(position.y())));
    if (i < 0 || j < 0 || i >= static_cast<int>(result_.layersA.size())
        || j >= static_cast<int>(result_.layersB.size()))
        return false;
    *row = i;
    *column = j;
    return true;
}

QPointF CkaHeatMap::cellCentre(int row, int column) const
{
    return {plot_->xAxis->coordToPixel(column), plot_->yAxis->coordToPixel(row)};
}

QString CkaHeatMap::describeAt(const QPointF& position) const
{
    int i = 0, j = 0;
    if (!cellAt(position, &i, &j))
        return {};
    const double value = result_.ckaAt(static_cast<size_t>(i), static_cast<size_t>(j));
    return tr("A %1 × B %2: CKA %3\nClick to see both layers' maps for the selected image")
        .arg(QString::fromStdString(result_.layersA[static_cast<size_t>(i)]),
            QString::fromStdString(result_.layersB[static_cast<size_t>(j)]),
            std::isnan(value) ? tr("undefined (a constant layer)") : QString::number(value, 'f', 4));
}

DriftPlot::DriftPlot(QWidget* parent)
    : QWidget(parent)
    , plot_(new QCustomPlot)
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(plot_);
    plot_->setMinimumSize(320, 220);
    plot_->legend->setVisible(true);
    plot_->legend->setFont(QFont(font().family(), 8));
    plot_->xAxis->setTickLabelRotation(-45);
    placeLegendBelow(plot_); // over the axis rect it would hide points
    plot_->legend->setWrap(4);
}

void DriftPlot::clear()
{
    // No axes of a previous result: plain axes over 0..1 without tick labels, a linear scale.
    plot_->xAxis->setLabel({});
    plot_->yAxis->setLabel({});
    showEmptyPlot(plot_, tr("Compare two checkpoints or precisions: the difference per layer appears here"));
}

int DriftPlot::graphCount() const
{
    return plot_->graphCount();
}

void DriftPlot::show(const CompareResult& result)
{
    clear();
    prepareFilledPlot(plot_);
    const bool precision = result.mode == CompareMode::Precision;
    size_t layers = 0;
    std::vector<std::string> names;
    auto addSeries = [&](const QString& name, const Comparison& comparison, double LayerDifference::*field,
                         const QColor& colour, Qt::PenStyle style) {
        auto* graph = plot_->addGraph();
        graph->setName(name);
        graph->setPen(QPen(colour, 2, style));
        graph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 5));
        for (size_t i = 0; i < comparison.layers.size(); ++i) {
            const double value = comparison.layers[i].*field;
            // A log axis shows no zero: equal values sit at its floor.
            graph->addData(static_cast<double>(i), precision ? std::max(value, 1e-12) : value);
        }
        if (comparison.firstOver) { // the first layer past the threshold, ringed
            auto* mark = plot_->addGraph();
            mark->removeFromLegend();
            mark->setLineStyle(QCPGraph::lsNone);
            mark->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(Qt::red, 2), Qt::NoBrush, 14));
            const double value = comparison.layers[*comparison.firstOver].*field;
            mark->addData(static_cast<double>(*comparison.firstOver), precision ? std::max(value, 1e-12) : value);
        }
    };
    int colour = 0;
    for (const auto& comparison : result.comparisons) {
        if (!comparison.unavailable.empty() || comparison.layers.empty())
            continue;
        if (comparison.layers.size() > layers) {
            layers = comparison.layers.size();
            names.clear();
            for (const auto& l : comparison.layers)
                names.push_back(l.layer);
        }
        if (precision) {
            addSeries(QString::fromStdString(comparison.name), comparison, &LayerDifference::relativeL2,
                seriesColour(colour++), Qt::SolidLine);
        } else {
            addSeries(tr("CKA"), comparison, &LayerDifference::cka, seriesColour(0), Qt::SolidLine);
            addSeries(tr("cosine"), comparison, &LayerDifference::cosine, seriesColour(1), Qt::DashLine);
        }
    }
    if (layers == 0) {
        plot_->replot(QCustomPlot::rpQueuedReplot);
        return;
    }
    auto* threshold = plot_->addGraph();
    threshold->setName(precision ? tr("threshold %1").arg(result.threshold, 0, 'g', 3)
                                 : tr("threshold %1").arg(result.threshold, 0, 'f', 3));
    threshold->setPen(QPen(Qt::gray, 1.5, Qt::DashLine));
    threshold->setData({-0.5, static_cast<double>(layers) - 0.5}, {result.threshold, result.threshold});
    plot_->legend->setVisible(true);
    QString xTitle = tr("layer, in the order run");
    plot_->xAxis->setTicker(
        layerTicks(names, std::max(plot_->width() - 120, 100), QFontMetrics(plot_->xAxis->tickLabelFont()), &xTitle));
    plot_->xAxis->setLabel(xTitle);
    plot_->xAxis->setRange(-0.5, static_cast<double>(layers) - 0.5);
    if (precision) {
        plot_->yAxis->setScaleType(QCPAxis::stLogarithmic);
        plot_->yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
        plot_->yAxis->setNumberFormat("eb");
        plot_->yAxis->setNumberPrecision(0);
        plot_->yAxis->setLabel(tr("relative L2 error against float64"));
        plot_->rescaleAxes(true);
        plot_->yAxis->rescale(true);
        const QCPRange range = plot_->yAxis->range();
        plot_->yAxis->setRange(
            std::min(range.lower, result.threshold) / 3, std::max(range.upper, result.threshold) * 3);
    } else {
        plot_->yAxis->setScaleType(QCPAxis::stLinear);
        plot_->yAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
        plot_->yAxis->setNumberFormat("g");
        plot_->yAxis->setNumberPrecision(4); // a precision run before set 0: "1, 1, 0.9, 0.9"
        plot_->yAxis->setLabel(tr("B against A"));
        double low = result.threshold;
        for (int g = 0; g < plot_->graphCount(); ++g) {
            bool found = false;
            const QCPRange values = plot_->graph(g)->getValueRange(found);
            if (found)
                low = std::min(low, values.lower);
        }
        plot_->yAxis->setRange(std::max(-1.0, low - 0.05), 1.01);
    }
    plot_->xAxis->setRange(-0.5, static_cast<double>(layers) - 0.5);
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

} // namespace torchscope
