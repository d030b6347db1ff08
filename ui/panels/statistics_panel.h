#pragma once

#include <QWidget>

class QLabel;

namespace torchscope {

class Document;
class StatisticsPlots;

// For the selected grabbed value over all loaded images: the StatisticsPlots of the numbers the
// worker computed (computeLayerStatistics) with a one-line summary.
class StatisticsPanel : public QWidget {
    Q_OBJECT
public:
    explicit StatisticsPanel(Document* document, QWidget* parent = nullptr);

    StatisticsPlots* plots() const { return plots_; }
    QString saveCurrentPlot(const QString& path) const;

Q_SIGNALS:
    // A channel of the selected layer's output, right-clicked in a plot.
    void channelPageRequested(const QString& layer, int channel);

public Q_SLOTS:
    void refresh();

private:
    Document* document_;
    QLabel* summary_;
    StatisticsPlots* plots_;
};

} // namespace torchscope
