#include "views/plot_legend.h"

#include "views/qcustomplot_include.h"

namespace torchscope {

void placeLegendBelow(QCustomPlot* plot)
{
    auto* row = new QCPLayoutGrid;
    plot->axisRect()->insetLayout()->take(plot->legend);
    plot->plotLayout()->addElement(1, 0, row);
    row->setMargins(QMargins(5, 0, 5, 5));
    row->addElement(0, 0, plot->legend);
    row->addElement(0, 1, new QCPLayoutElement(plot));
    row->setColumnStretchFactor(1, 1000);
    plot->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
    plot->legend->setBorderPen(Qt::NoPen);
    plot->plotLayout()->setRowStretchFactor(1, 0.001);
}

} // namespace torchscope
