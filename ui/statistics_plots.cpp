#include "statistics_plots.h"

#include "plot_file.h"
#include "qcustomplot_include.h"
#include "record/layer_statistics.h"

#include <algorithm>

namespace torchscope {

StatisticsPlots::StatisticsPlots(QWidget* parent)
    : QTabWidget(parent)
    , histogram_(new QCustomPlot)
    , channels_(new QCustomPlot)
    , sparsity_(new QCustomPlot)
    , sorted_(new QCustomPlot)
{
    addTab(histogram_, tr("Histogram"));
    addTab(channels_, tr("Channel mean ± std"));
    addTab(sparsity_, tr("Zeros per channel"));
    addTab(sorted_, tr("Channels by mean"));
}

QCustomPlot* StatisticsPlots::currentPlot() const
{
    return qobject_cast<QCustomPlot*>(currentWidget());
}

void StatisticsPlots::clear()
{
    for (QCustomPlot* plot : {histogram_, channels_, sparsity_, sorted_}) {
        plot->clearPlottables();
        plot->replot(QCustomPlot::rpQueuedReplot);
    }
}

void StatisticsPlots::show(const LayerStatistics& s)
{
    clear();
    const double binWidth = (s.histogramMax - s.histogramMin) / std::max<size_t>(1, s.histogram.size());
    QVector<double> x, y;
    for (size_t i = 0; i < s.histogram.size(); ++i) {
        x << s.histogramMin + (i + 0.5) * binWidth;
        y << double(s.histogram[i]);
    }
    auto* bars = new QCPBars(histogram_->xAxis, histogram_->yAxis);
    bars->setData(x, y);
    bars->setWidth(binWidth);
    histogram_->xAxis->setLabel(tr("value"));
    histogram_->yAxis->setLabel(tr("count"));

    QVector<double> c, mean, upper, lower, zeros;
    for (size_t i = 0; i < s.channelMean.size(); ++i) {
        c << double(i);
        mean << s.channelMean[i];
        upper << s.channelMean[i] + s.channelStd[i];
        lower << s.channelMean[i] - s.channelStd[i];
        zeros << s.channelZeroFraction[i];
    }
    auto* top = channels_->addGraph();
    top->setData(c, upper);
    top->setPen(Qt::NoPen);
    auto* bottom = channels_->addGraph();
    bottom->setData(c, lower);
    bottom->setPen(Qt::NoPen);
    top->setBrush(QColor(70, 130, 180, 70));
    top->setChannelFillGraph(bottom);
    auto* line = channels_->addGraph();
    line->setData(c, mean);
    line->setPen(QPen(QColor(20, 60, 120), 1.5));
    channels_->xAxis->setLabel(tr("channel"));
    channels_->yAxis->setLabel(tr("mean ± std"));

    auto* zeroBars = new QCPBars(sparsity_->xAxis, sparsity_->yAxis);
    zeroBars->setData(c, zeros);
    sparsity_->xAxis->setLabel(tr("channel"));
    sparsity_->yAxis->setLabel(tr("fraction of zeros"));

    // Channels ranked by their mean; tick labels name the channels.
    std::vector<size_t> order(s.channelMean.size());
    for (size_t i = 0; i < order.size(); ++i)
        order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return s.channelMean[a] > s.channelMean[b]; });
    QVector<double> rank, ranked;
    QVector<QString> names;
    for (size_t i = 0; i < order.size(); ++i) {
        rank << double(i);
        ranked << s.channelMean[order[i]];
        names << QString::number(order[i]);
    }
    auto* sortedBars = new QCPBars(sorted_->xAxis, sorted_->yAxis);
    sortedBars->setData(rank, ranked);
    if (order.size() <= 64) {
        QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
        ticker->addTicks(rank, names);
        sorted_->xAxis->setTicker(ticker);
    }
    sorted_->xAxis->setLabel(tr("channel (sorted by mean)"));
    sorted_->yAxis->setLabel(tr("mean"));

    for (QCustomPlot* plot : {histogram_, channels_, sparsity_, sorted_}) {
        plot->rescaleAxes();
        plot->replot(QCustomPlot::rpQueuedReplot);
    }
    sparsity_->yAxis->setRange(0, 1);
}

QString StatisticsPlots::saveCurrentPlot(const QString& path) const
{
    return savePlotFile(currentPlot(), path);
}

} // namespace torchscope
