#include "panels/setup_and_results.h"

#include <QScrollArea>
#include <QSplitter>
#include <QVBoxLayout>

namespace torchscope {

void layOutSetupAndResults(QWidget* tab, QWidget* setup, QWidget* results)
{
    auto* scroll = new QScrollArea;
    scroll->setWidget(setup);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    auto* splitter = new QSplitter(Qt::Horizontal);
    splitter->addWidget(scroll);
    splitter->addWidget(results);
    splitter->setStretchFactor(0, 0);
    splitter->setStretchFactor(1, 1);
    splitter->setSizes({360, 800});
    splitter->setChildrenCollapsible(false);
    auto* layout = new QVBoxLayout(tab);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(splitter);
}

} // namespace torchscope
