#include "views/empty_plot.h"

#include "views/qcustomplot_include.h"

namespace torchscope {

void showEmptyPlot(QCustomPlot* plot, const QString& note)
{
    plot->clearPlottables();
    plot->clearItems();
    for (QCPAxis* axis : {plot->xAxis, plot->yAxis}) {
        axis->setTicker(QSharedPointer<QCPAxisTicker>::create());
        axis->setScaleType(QCPAxis::stLinear);
        axis->setRange(0, 1);
        axis->setTickLabels(false);
    }
    if (plot->legend)
        plot->legend->setVisible(false);
    auto* text = new QCPItemText(plot);
    text->position->setType(QCPItemPosition::ptAxisRectRatio);
    text->position->setCoords(0.5, 0.5);
    text->setText(note);
    text->setColor(Qt::gray);
    plot->replot(QCustomPlot::rpQueuedReplot);
}

void prepareFilledPlot(QCustomPlot* plot)
{
    plot->clearItems();
    plot->xAxis->setTickLabels(true);
    plot->yAxis->setTickLabels(true);
}

} // namespace torchscope
