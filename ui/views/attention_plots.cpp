#include "views/attention_plots.h"

#include "views/empty_plot.h"
#include "views/plot_colours.h"
#include "views/qcustomplot_include.h"

#include <QHBoxLayout>

namespace torchscope {
namespace {

QCustomPlot* newPlot(const QString& y)
{
    auto* plot = new QCustomPlot;
    plot->xAxis->setLabel(QObject::tr("layer"));
    plot->yAxis->setLabel(y);
    plot->setMinimumHeight(130);
    return plot;
}

// The mean over the images of each head's figure, a dot per head at its layer.
void drawFigure(
    QCustomPlot* plot, const AttentionWorkbenchResult& result, bool distance, int pickedLayer, int pickedHead)
{
    prepareFilledPlot(plot);
    plot->clearGraphs();
    auto ticker = QSharedPointer<QCPAxisTickerFixed>::create(); // layers are whole numbers
    ticker->setTickStep(1.0);
    ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
    plot->xAxis->setTicker(ticker);
    auto* heads = plot->addGraph();
    heads->setLineStyle(QCPGraph::lsNone);
    heads->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, seriesColour(0), 5));
    auto* picked = plot->addGraph();
    picked->setLineStyle(QCPGraph::lsNone);
    picked->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, QColor(214, 39, 40), 9));
    for (size_t l = 0; l < result.layers.size(); ++l) {
        const auto& rows = distance ? result.layers[l].distance : result.layers[l].entropy;
        if (rows.empty())
            continue;
        for (size_t h = 0; h < rows.front().size(); ++h) {
            double mean = 0.0;
            for (const auto& row : rows)
                mean += row[h] / static_cast<double>(rows.size());
            heads->addData(static_cast<double>(l), mean);
            if (static_cast<int>(l) == pickedLayer && static_cast<int>(h) == pickedHead)
                picked->addData(static_cast<double>(l), mean);
        }
    }
    plot->rescaleAxes();
    plot->xAxis->setRange(-0.5, static_cast<double>(result.layers.size()) - 0.5);
    const QCPRange y = plot->yAxis->range();
    plot->yAxis->setRange(y.lower - 0.05 * y.size() - 1e-9, y.upper + 0.05 * y.size() + 1e-9);
    plot->replot(QCustomPlot::rpQueuedReplot);
}

} // namespace

AttentionPlots::AttentionPlots(QWidget* parent)
    : QWidget(parent)
    , distance_(newPlot(tr("mean distance (px)")))
    , entropy_(newPlot(tr("entropy (nats)")))
{
    auto* row = new QHBoxLayout(this);
    row->setContentsMargins(0, 0, 0, 0);
    row->addWidget(distance_);
    row->addWidget(entropy_);
    clear();
}

void AttentionPlots::setResult(const AttentionWorkbenchResultPtr& result)
{
    result_ = result;
    draw();
}

void AttentionPlots::setPicked(int layer, int head)
{
    pickedLayer_ = layer;
    pickedHead_ = head;
    draw();
}

void AttentionPlots::clear()
{
    result_.reset();
    showEmptyPlot(distance_, tr("Each head's mean attention distance, per layer"));
    showEmptyPlot(entropy_, tr("Each head's attention entropy, per layer"));
}

void AttentionPlots::draw()
{
    if (!result_)
        return;
    drawFigure(distance_, *result_, true, pickedLayer_, pickedHead_);
    drawFigure(entropy_, *result_, false, pickedLayer_, pickedHead_);
}

} // namespace torchscope
