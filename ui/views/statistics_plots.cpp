#include "views/statistics_plots.h"

#include <QMenu>

#include "record/layer_statistics.h"
#include "views/plot_file.h"
#include "views/qcustomplot_include.h"

#include <QToolTip>

#include <algorithm>
#include <cmath>

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
    for (QCustomPlot* plot : {histogram_, channels_, sparsity_, sorted_}) {
        // Plain numbers ("-5e-05", not "-5.0·10⁻⁵"), few of them: a narrow dock stays readable.
        for (QCPAxis* axis : {plot->xAxis, plot->yAxis}) {
            axis->setNumberFormat("g");
            axis->setNumberPrecision(6); // ticks are round numbers: 6 digits keep counts whole
            axis->ticker()->setTickCount(4);
        }
    }
    for (QCustomPlot* plot : {channels_, sparsity_, sorted_}) {
        plot->setMouseTracking(true);
        connect(plot, &QCustomPlot::mouseMove, this, [this, plot](QMouseEvent* event) { hover(plot, event); });
        connect(plot, &QCustomPlot::mousePress, this, [this, plot](QMouseEvent* event) {
            const int channel = channelAt(plot, event->position());
            if (channel < 0)
                return;
            markChannel(channel);
            Q_EMIT channelClicked(channel);
            if (event->button() == Qt::RightButton) {
                QMenu menu(plot);
                menu.addAction(tr("Channel page for channel %1…").arg(channel), this,
                    [this, channel] { Q_EMIT channelPageRequested(channel); });
                menu.exec(event->globalPosition().toPoint());
            }
        });
    }
}

int StatisticsPlots::channelAt(QCustomPlot* plot, const QPointF& position) const
{
    const auto count = static_cast<long>(shown_.channelMean.size());
    if (count == 0 || !plot->axisRect()->rect().contains(position.toPoint()))
        return -1;
    const long x = std::lround(plot->xAxis->pixelToCoord(position.x()));
    if (x < 0 || x >= count)
        return -1;
    return static_cast<int>(plot == sorted_ ? order_[static_cast<size_t>(x)] : static_cast<size_t>(x));
}

void StatisticsPlots::hover(QCustomPlot* plot, QMouseEvent* event)
{
    const int channel = channelAt(plot, event->position());
    if (channel < 0) {
        QToolTip::hideText();
        return;
    }
    const auto c = static_cast<size_t>(channel);
    QToolTip::showText(event->globalPosition().toPoint(),
        tr("channel %1\nmean %2 ± %3\nmin %4, max %5\nzeros %6 %\nclick to pick it in every view")
            .arg(channel)
            .arg(shown_.channelMean[c], 0, 'g', 5)
            .arg(shown_.channelStd[c], 0, 'g', 4)
            .arg(shown_.channelMin[c], 0, 'g', 4)
            .arg(shown_.channelMax[c], 0, 'g', 4)
            .arg(100.0 * shown_.channelZeroFraction[c], 0, 'f', 1),
        plot);
}

void StatisticsPlots::markChannel(int channel)
{
    marked_ = channel;
    drawMarks();
}

// Channel numbers under the ranked bars, every n-th as the plot's width allows (upright labels one
// text line apart, never overlapping); hovering names any bar's channel.
void StatisticsPlots::labelSortedChannels()
{
    const auto count = static_cast<int>(order_.size());
    if (count == 0)
        return;
    const QFontMetrics metrics(sorted_->xAxis->tickLabelFont());
    const bool upright = count > 12;
    const int room = upright ? metrics.height() + 6 : metrics.horizontalAdvance(QString::number(count)) + 8;
    const int width
        = std::max(50, sorted_->axisRect()->width() > 0 ? sorted_->axisRect()->width() : sorted_->width() - 60);
    const int every = std::max(1, (count * room + width - 1) / width);
    QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
    for (int i = 0; i < count; i += every)
        ticker->addTick(i, QString::number(order_[static_cast<size_t>(i)]));
    sorted_->xAxis->setTicker(ticker);
    sorted_->xAxis->setTickLabelRotation(upright ? 90 : 0);
    sorted_->xAxis->setLabel(every == 1
            ? tr("channel (sorted by mean)")
            : tr("channel (sorted by mean; one label per %1 bars, hover for the rest)").arg(every));
}

void StatisticsPlots::resizeEvent(QResizeEvent* event)
{
    QTabWidget::resizeEvent(event);
    if (!order_.empty()) {
        labelSortedChannels();
        sorted_->replot(QCustomPlot::rpQueuedReplot);
    }
}

void StatisticsPlots::drawMarks()
{
    for (QCustomPlot* plot : {channels_, sparsity_, sorted_}) {
        plot->clearItems();
        if (marked_ < 0 || marked_ >= static_cast<int>(shown_.channelMean.size()))
            continue;
        double x = marked_;
        if (plot == sorted_)
            x = double(std::find(order_.begin(), order_.end(), static_cast<size_t>(marked_)) - order_.begin());
        auto* line = new QCPItemStraightLine(plot);
        line->point1->setCoords(x, 0);
        line->point2->setCoords(x, 1);
        line->setPen(QPen(QColor(220, 50, 32), 1.5, Qt::DashLine));
        auto* label = new QCPItemText(plot);
        label->position->setTypeX(QCPItemPosition::ptPlotCoords);
        label->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
        label->position->setCoords(x, 0.02);
        label->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
        label->setPadding(QMargins(4, 0, 0, 0));
        label->setColor(QColor(220, 50, 32));
        label->setText(tr("channel %1").arg(marked_));
        plot->replot(QCustomPlot::rpQueuedReplot);
    }
}

QCustomPlot* StatisticsPlots::currentPlot() const
{
    return qobject_cast<QCustomPlot*>(currentWidget());
}

void StatisticsPlots::clear()
{
    shown_ = {};
    order_.clear();
    for (QCustomPlot* plot : {histogram_, channels_, sparsity_, sorted_}) {
        plot->clearPlottables();
        plot->clearItems();
        // Empty axes, not the last layer's ranges and channel numbers.
        if (plot == sorted_) { // its channel-number ticker goes
            plot->xAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
            plot->xAxis->ticker()->setTickCount(4);
            plot->xAxis->setTickLabelRotation(0);
        }
        plot->xAxis->setRange(0, 1);
        plot->yAxis->setRange(0, 1);
        plot->xAxis->setTickLabels(false); // an empty plot has no numbers to read
        plot->yAxis->setTickLabels(false);
        plot->replot(QCustomPlot::rpQueuedReplot);
    }
}

void StatisticsPlots::show(const LayerStatistics& s)
{
    clear();
    shown_ = s;
    for (QCustomPlot* plot : {histogram_, channels_, sparsity_, sorted_}) {
        plot->xAxis->setTickLabels(true);
        plot->yAxis->setTickLabels(true);
    }
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
    std::vector<size_t>& order = order_;
    order.resize(s.channelMean.size());
    for (size_t i = 0; i < order.size(); ++i)
        order[i] = i;
    std::stable_sort(
        order.begin(), order.end(), [&](size_t a, size_t b) { return s.channelMean[a] > s.channelMean[b]; });
    QVector<double> rank, ranked;
    for (size_t i = 0; i < order.size(); ++i) {
        rank << double(i);
        ranked << s.channelMean[order[i]];
    }
    auto* sortedBars = new QCPBars(sorted_->xAxis, sorted_->yAxis);
    sortedBars->setData(rank, ranked);
    labelSortedChannels();
    sorted_->yAxis->setLabel(tr("mean"));

    for (QCustomPlot* plot : {histogram_, channels_, sparsity_, sorted_}) {
        plot->rescaleAxes();
        plot->replot(QCustomPlot::rpQueuedReplot);
    }
    // Bars at 0 and C-1 are drawn whole, not cut in half by the axis ends.
    for (QCustomPlot* plot : {channels_, sparsity_, sorted_})
        plot->xAxis->setRange(-0.6, std::max<double>(0.6, double(s.channelMean.size()) - 0.4));
    sparsity_->yAxis->setRange(0, 1);
    drawMarks();
}

QString StatisticsPlots::saveCurrentPlot(const QString& path) const
{
    return savePlotFile(currentPlot(), path);
}

} // namespace torchscope
