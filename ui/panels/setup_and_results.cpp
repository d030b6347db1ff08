#include "panels/setup_and_results.h"

#include "jobs/job_handle.h"
#include "panels/job_setup_column.h"

#include <QSplitter>
#include <QVBoxLayout>

#include <algorithm>

namespace torchscope {

void layOutSetupAndResults(QWidget* tab, JobSetupColumn* setup, QWidget* results)
{
    auto* splitter = new QSplitter(Qt::Horizontal);
    splitter->addWidget(setup);
    splitter->addWidget(results);
    splitter->setStretchFactor(0, 0);
    splitter->setStretchFactor(1, 1);
    // The setup column as wide as its form wants (buttons and fields whole), and never squeezed
    // below 300 pixels (a wider form scrolls): the splitter scales the sizes given here to the
    // tab's width once shown, which left a 150-pixel column at 1600 x 1000. More would make the
    // window wider than a 1280-pixel screen.
    setup->setMinimumWidth(std::min(setup->preferredWidth(), 300));
    splitter->setSizes({std::max(400, setup->preferredWidth()), 800});
    splitter->setChildrenCollapsible(false);
    auto* layout = new QVBoxLayout(tab);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(splitter);
}

} // namespace torchscope
