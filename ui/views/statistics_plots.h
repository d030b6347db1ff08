#pragma once

#include "record/layer_statistics.h"

#include <QTabWidget>

class QCustomPlot;
class QMouseEvent;

namespace torchscope {

// Draws one layer's statistics: histogram of values, per-channel mean with a ±std band,
// fraction of zeros per channel, and channel means sorted. Drawing only: the numbers come from
// core (LayerStatistics). Replots are queued, so each plot draws in an event of its own.
// Hovering a per-channel plot shows the channel's numbers; clicking picks the channel
// (channelClicked); markChannel() draws the picked channel in every plot.
class StatisticsPlots : public QTabWidget {
    Q_OBJECT
public:
    explicit StatisticsPlots(QWidget* parent = nullptr);

    void show(const LayerStatistics& statistics);
    void clear();

    QCustomPlot* histogramPlot() const { return histogram_; }
    QCustomPlot* channelPlot() const { return channels_; }
    QCustomPlot* sparsityPlot() const { return sparsity_; }
    QCustomPlot* sortedPlot() const { return sorted_; }
    QCustomPlot* currentPlot() const;
    // Writes the plot on show to .png or .pdf (by extension), atomically. Returns an error or "".
    QString saveCurrentPlot(const QString& path) const;

    // The channel under a position of a per-channel plot (-1: none), for clicks and hovering.
    int channelAt(QCustomPlot* plot, const QPointF& position) const;
    int markedChannel() const { return marked_; }

public Q_SLOTS:
    void markChannel(int channel);

Q_SIGNALS:
    void channelClicked(int channel);
    void channelPageRequested(int channel); // right-click on a channel

private:
    void hover(QCustomPlot* plot, QMouseEvent* event);
    void drawMarks();
    void labelSortedChannels(); // as many channel numbers as the axis has room for
    void resizeEvent(QResizeEvent* event) override;

    QCustomPlot* histogram_;
    QCustomPlot* channels_;
    QCustomPlot* sparsity_;
    QCustomPlot* sorted_;
    LayerStatistics shown_;
    std::vector<size_t> order_; // channels by mean, highest first (the sorted plot's x)
    int marked_ = -1;
};

} // namespace torchscope
