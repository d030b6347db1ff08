#include "panels/statistics_panel.h"

#include "document/capture_keys.h"
#include "document/document.h"
#include "views/statistics_plots.h"

#include <QLabel>
#include <QVBoxLayout>

namespace torchscope {

StatisticsPanel::StatisticsPanel(Document* document, QWidget* parent)
    : QWidget(parent)
    , document_(document)
    , summary_(new QLabel)
    , plots_(new StatisticsPlots)
{
    summary_->setWordWrap(true);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(summary_);
    layout->addWidget(plots_, 1);
    connect(document_, &Document::resultsChanged, this, &StatisticsPanel::refresh);
    connect(document_, &Document::selectionChanged, this, &StatisticsPanel::refresh);
    connect(plots_, &StatisticsPlots::channelClicked, document_, &Document::setSelectedChannel);
    connect(plots_, &StatisticsPlots::channelPageRequested, this, [this](int channel) {
        const CaptureKey key = CaptureKey::parse(document_->selectedKey().toStdString());
        if (key.kind == CaptureKind::Output && key.path != "output" && key.path.rfind("probe:", 0) != 0)
            Q_EMIT channelPageRequested(QString::fromStdString(key.path), channel);
    });
    connect(document_, &Document::channelSelected, plots_, &StatisticsPlots::markChannel);
    refresh();
}

QString StatisticsPanel::saveCurrentPlot(const QString& path) const
{
    return plots_->saveCurrentPlot(path);
}

void StatisticsPanel::refresh()
{
    const auto snapshot = document_->snapshot();
    const std::string key = document_->selectedKey().toStdString();
    const auto it = snapshot ? snapshot->statistics.find(key) : decltype(snapshot->statistics.end()){};
    if (!snapshot || it == snapshot->statistics.end()) {
        plots_->clear();
        summary_->setText(tr("Statistics of the selected layer over the loaded images appear here."));
        return;
    }
    const LayerStatistics& s = it->second;
    summary_->setText(tr("<b>%1</b> over %2 image(s): min %3, max %4, mean %5, zeros %6 %")
                          .arg(QString::fromStdString(key).toHtmlEscaped())
                          .arg(s.samples)
                          .arg(s.min, 0, 'g', 4)
                          .arg(s.max, 0, 'g', 4)
                          .arg(s.mean, 0, 'g', 4)
                          .arg(100.0 * s.zeroFraction, 0, 'f', 1));
    plots_->show(s);
    plots_->markChannel(document_->selectedChannel());
}

} // namespace torchscope
