#pragma once

#include <QTabWidget>

class QCustomPlot;

namespace torchscope {

struct LayerStatistics;

// Draws one layer's statistics: histogram of values, per-channel mean with a ±std band,
// fraction of zeros per channel, and channel means sorted. Drawing only: the numbers come from
// core (LayerStatistics). Replots are queued, so each plot draws in an event of its own.
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

private:
    QCustomPlot* histogram_;
    QCustomPlot* channels_;
    QCustomPlot* sparsity_;
    QCustomPlot* sorted_;
};

} // namespace torchscope
