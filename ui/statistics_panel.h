#pragma once

#include <QWidget>

class QCustomPlot;
class QLabel;
class QTabWidget;

namespace torchscope {

class Document;

// For the selected grabbed value over all loaded images: histogram of values, per-channel mean
// with a ±std band, and the fraction of zeros per channel. The numbers come from core
// (computeLayerStatistics in the worker); this only draws. Plots save as PNG or PDF.
class StatisticsPanel : public QWidget {
    Q_OBJECT
public:
    explicit StatisticsPanel(Document* document, QWidget* parent = nullptr);

    QCustomPlot* histogramPlot() const { return histogram_; }
    QCustomPlot* channelPlot() const { return channels_; }
    QCustomPlot* sparsityPlot() const { return sparsity_; }
    QCustomPlot* currentPlot() const;
    // Writes the plot on show to .png or .pdf (by extension), atomically. Returns an error or "".
    QString saveCurrentPlot(const QString& path) const;

public Q_SLOTS:
    void refresh();

private:
    Document* document_;
    QLabel* summary_;
    QTabWidget* tabs_;
    QCustomPlot* histogram_;
    QCustomPlot* channels_;
    QCustomPlot* sparsity_;
};

} // namespace torchscope
