#include "panels/setup_and_results.h"

#include <QScrollArea>
#include <QScrollBar>
#include <QSplitter>
#include <QVBoxLayout>

#include <algorithm>

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
    // The setup column as wide as its form wants (buttons and fields whole), at least 400 pixels.
    const int setupWidth = std::max(400, setup->sizeHint().width() + scroll->verticalScrollBar()->sizeHint().width());
    splitter->setSizes({setupWidth, 800});
    splitter->setChildrenCollapsible(false);
    auto* layout = new QVBoxLayout(tab);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(splitter);
}

} // namespace torchscope
