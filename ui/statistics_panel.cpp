#include "statistics_panel.h"

#include "document.h"
#include "qcustomplot_include.h"

#include <QDir>
#include <QFileInfo>
#include <QLabel>
#include <QSaveFile>
#include <QTabWidget>
#include <QTemporaryFile>
#include <QVBoxLayout>

#include <cstdio>

namespace torchscope {

StatisticsPanel::StatisticsPanel(Document* document, QWidget* parent)
    : QWidget(parent)
    , document_(document)
    , summary_(new QLabel)
    , tabs_(new QTabWidget)
    , histogram_(new QCustomPlot)
    , channels_(new QCustomPlot)
    , sparsity_(new QCustomPlot)
{
    summary_->setWordWrap(true);
    tabs_->addTab(histogram_, tr("Histogram"));
    tabs_->addTab(channels_, tr("Channel mean ± std"));
    tabs_->addTab(sparsity_, tr("Zeros per channel"));
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(summary_);
    layout->addWidget(tabs_, 1);
    connect(document_, &Document::resultsChanged, this, &StatisticsPanel::refresh);
    connect(document_, &Document::selectionChanged, this, &StatisticsPanel::refresh);
    refresh();
}

QCustomPlot* StatisticsPanel::currentPlot() const
{
    return qobject_cast<QCustomPlot*>(tabs_->currentWidget());
}

void StatisticsPanel::refresh()
{
    // Queued replots: each plot draws in an event of its own, so the GUI thread never blocks
    // for all three at once.
    for (QCustomPlot* plot : {histogram_, channels_, sparsity_}) {
        plot->clearPlottables();
        plot->replot(QCustomPlot::rpQueuedReplot);
    }
    const auto snapshot = document_->snapshot();
    const std::string key = document_->selectedKey().toStdString();
    const auto it = snapshot ? snapshot->statistics.find(key) : decltype(snapshot->statistics.end()){};
    if (!snapshot || it == snapshot->statistics.end()) {
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

    const double binWidth = (s.histogramMax - s.histogramMin) / std::max<size_t>(1, s.histogram.size());
    QVector<double> x, y;
    for (size_t i = 0; i < s.histogram.size(); ++i) {
        x << s.histogramMin + (i + 0.5) * binWidth;
        y << double(s.histogram[i]);
    }
    auto* bars = new QCPBars(histogram_->xAxis, histogram_->yAxis);
    bars->setData(x, y);
    bars->setWidth(binWidth);
    histogram_->xAxis->setLabel(tr("value"));
    histogram_->yAxis->setLabel(tr("count"));
    histogram_->rescaleAxes();
    histogram_->replot(QCustomPlot::rpQueuedReplot);

    QVector<double> c, mean, upper, lower, zeros;
    for (size_t i = 0; i < s.channelMean.size(); ++i) {
        c << double(i);
        mean << s.channelMean[i];
        upper << s.channelMean[i] + s.channelStd[i];
        lower << s.channelMean[i] - s.channelStd[i];
        zeros << s.channelZeroFraction[i];
    }
    auto* top = channels_->addGraph();
    top->setData(c, upper);
    top->setPen(Qt::NoPen);
    auto* bottom = channels_->addGraph();
    bottom->setData(c, lower);
    bottom->setPen(Qt::NoPen);
    top->setBrush(QColor(70, 130, 180, 70));
    top->setChannelFillGraph(bottom);
    auto* line = channels_->addGraph();
    line->setData(c, mean);
    line->setPen(QPen(QColor(20, 60, 120), 1.5));
    channels_->xAxis->setLabel(tr("channel"));
    channels_->yAxis->setLabel(tr("mean ± std"));
    channels_->rescaleAxes();
    channels_->replot(QCustomPlot::rpQueuedReplot);

    auto* zeroBars = new QCPBars(sparsity_->xAxis, sparsity_->yAxis);
    zeroBars->setData(c, zeros);
    sparsity_->xAxis->setLabel(tr("channel"));
    sparsity_->yAxis->setLabel(tr("fraction of zeros"));
    sparsity_->rescaleAxes();
    sparsity_->yAxis->setRange(0, 1);
    sparsity_->replot(QCustomPlot::rpQueuedReplot);
}

QString StatisticsPanel::saveCurrentPlot(const QString& path) const
{
    QCustomPlot* plot = currentPlot();
    plot->replot(); // a queued replot may still be pending
    if (path.endsWith(".png", Qt::CaseInsensitive)) {
        QSaveFile file(path);
        if (!file.open(QIODevice::WriteOnly) || !plot->toPixmap().save(&file, "PNG") || !file.commit())
            return file.errorString();
        return {};
    }
    if (path.endsWith(".pdf", Qt::CaseInsensitive)) {
        // QCustomPlot writes PDFs by name only: write beside the target, then rename into place.
        QTemporaryFile temp(QFileInfo(path).absoluteDir().filePath(".plot-XXXXXX.pdf"));
        if (!temp.open())
            return temp.errorString();
        temp.close();
        if (!plot->savePdf(temp.fileName()))
            return tr("QCustomPlot could not write the PDF");
        if (std::rename(QFile::encodeName(temp.fileName()).constData(), QFile::encodeName(path).constData()) != 0)
            return tr("cannot move the PDF into place");
        temp.setAutoRemove(false);
        return {};
    }
    return tr("unknown plot format (use .png or .pdf)");
}

} // namespace torchscope
