#include "views/attribution_plots.h"

#include "views/attribution_grid.h"
#include "views/color_bar.h"
#include "views/empty_plot.h"
#include "views/overlay_image.h"
#include "views/plot_colours.h"
#include "views/plot_legend.h"
#include "views/qcustomplot_include.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QScrollArea>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace torchscope {
namespace {

QCustomPlot* newPlot(const QString& x, const QString& y)
{
    auto* plot = new QCustomPlot;
    plot->xAxis->setLabel(x);
    plot->yAxis->setLabel(y);
    plot->setMinimumHeight(220);
    // Its legend's widest row would otherwise set the tab's least width (574 px with four methods),
    // pushing the window's docks aside once a result is drawn; a narrow tab clips the legend instead.
    plot->setMinimumWidth(280);
    placeLegendBelow(plot);
    plot->legend->setWrap(2); // a method's two lines side by side, a line per method: a narrow tab shows all
    plot->legend->setVisible(true);
    return plot;
}

} // namespace

AttributionPlots::AttributionPlots(QObject* parent)
    : QObject(parent)
    , curves_(newPlot(tr("share of the pixels deleted / inserted"), tr("target probability (mean over the images)")))
    , sanity_(newPlot(tr("randomised layer (from the first randomised on)"), tr("similarity to the original map")))
    , mapsMethod_(new QComboBox)
    , mapsRow_(new QHBoxLayout)
    , sanityNote_(new QLabel)
    , sanityPage_(new QWidget)
{
    auto* sanityColumn = new QVBoxLayout(sanityPage_);
    sanityColumn->setContentsMargins(0, 0, 0, 0);
    sanityColumn->addWidget(sanity_, 1);
    auto* mapsHeader = new QHBoxLayout;
    mapsHeader->addWidget(new QLabel(tr("The first image's map with the layers randomised so far:")));
    mapsHeader->addWidget(mapsMethod_);
    mapsHeader->addStretch(1);
    sanityColumn->addLayout(mapsHeader);
    auto* mapsArea = new QScrollArea;
    auto* mapsContent = new QWidget;
    mapsContent->setLayout(mapsRow_);
    mapsArea->setWidget(mapsContent);
    mapsArea->setWidgetResizable(true);
    mapsArea->setMinimumHeight(130);
    sanityColumn->addWidget(mapsArea);
    sanityNote_->setWordWrap(true);
    sanityColumn->addWidget(sanityNote_);

    sanity_->xAxis->setTickLabelRotation(90);
    connect(mapsMethod_, &QComboBox::currentTextChanged, this, &AttributionPlots::drawRandomisedMaps);
    clear();
}

QWidget* AttributionPlots::curvesPage() const
{
    return curves_;
}

void AttributionPlots::clear()
{
    result_.reset();
    showEmptyPlot(curves_, tr("Tick deletion or insertion to see their curves"));
    showEmptyPlot(sanity_, tr("Choose a sanity check to see the maps' similarity per randomised layer"));
    mapsMethod_->clear();
    drawRandomisedMaps();
    sanityNote_->clear();
}

void AttributionPlots::setResult(const AttributionWorkbenchResultPtr& result)
{
    result_ = result;
    drawCurves();
    drawSanity();
    const QSignalBlocker block(mapsMethod_);
    mapsMethod_->clear();
    for (const auto& [method, layers] : result_->sanity)
        mapsMethod_->addItem(QString::fromStdString(method));
    drawRandomisedMaps();
}

void AttributionPlots::drawCurves()
{
    prepareFilledPlot(curves_);
    curves_->clearGraphs();
    bool any = false;
    int colour = 0;
    for (const auto& method : result_->methods) {
        const auto summary = result_->summary.find(method);
        if (summary == result_->summary.end())
            continue;
        const QColor pen = seriesColour(colour++);
        for (const char* metric : {"deletion", "insertion"}) {
            const auto found = summary->second.find(metric);
            if (found == summary->second.end() || found->second.meanCurve.size() < 2)
                continue;
            const std::vector<double>& curve = found->second.meanCurve;
            auto* graph = curves_->addGraph();
            graph->setName(
                QString("%1 %2 (AUC %3)").arg(QString::fromStdString(method), metric, scaleNumber(found->second.mean)));
            graph->setPen(QPen(pen, 2, std::string(metric) == "deletion" ? Qt::SolidLine : Qt::DashLine));
            for (size_t k = 0; k < curve.size(); ++k)
                graph->addData(static_cast<double>(k) / static_cast<double>(curve.size() - 1), curve[k]);
            any = true;
        }
    }
    if (!any) {
        showEmptyPlot(curves_, tr("Tick deletion or insertion to see their curves"));
        return;
    }
    curves_->xAxis->setRange(0, 1);
    curves_->yAxis->rescale();
    // From 0 (or below), with a little room above the highest curve so that it does not run along the frame.
    const QCPRange range = curves_->yAxis->range();
    const double lower = std::min(0.0, range.lower);
    curves_->yAxis->setRange(lower, range.upper + 0.05 * std::max(range.upper - lower, 1e-12));
    curves_->replot(QCustomPlot::rpQueuedReplot);
}

void AttributionPlots::drawSanity()
{
    prepareFilledPlot(sanity_);
    sanity_->clearGraphs();
    if (result_->sanity.empty()) {
        showEmptyPlot(sanity_, tr("Choose a sanity check to see the maps' similarity per randomised layer"));
        sanityNote_->clear();
        return;
    }
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    int colour = 0;
    size_t most = 0;
    for (const auto& [method, layers] : result_->sanity) {
        const QColor pen = seriesColour(colour++);
        auto* spearman = sanity_->addGraph();
        spearman->setName(QString("%1: Spearman |map|").arg(QString::fromStdString(method)));
        spearman->setPen(QPen(pen, 2));
        spearman->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 5));
        auto* ssim = sanity_->addGraph();
        ssim->setName(QString("%1: SSIM").arg(QString::fromStdString(method)));
        ssim->setPen(QPen(pen, 1.5, Qt::DashLine));
        for (size_t k = 0; k < layers.size(); ++k) {
            spearman->addData(static_cast<double>(k), layers[k].spearmanAbs);
            ssim->addData(static_cast<double>(k), layers[k].ssim);
            most = std::max(most, k + 1);
        }
    }
    // Every layer's name when they fit, else every n-th (the axis says so; the rest on hover of the maps).
    const auto& names
        = std::max_element(result_->sanity.begin(), result_->sanity.end(), [](const auto& a, const auto& b) {
              return a.second.size() < b.second.size();
          })->second;
    const size_t every = std::max<size_t>(1, (most + 15) / 16);
    for (size_t k = 0; k < names.size(); k += every)
        ticker->addTick(static_cast<double>(k), QString::fromStdString(names[k].layer));
    sanity_->xAxis->setLabel(every == 1 ? tr("randomised layer, in the order randomised")
                                        : tr("randomised layer, in the order randomised (one name per %1 layers; %2 "
                                             "in all)")
                                              .arg(every)
                                              .arg(most));
    sanity_->xAxis->setTicker(ticker);
    sanity_->xAxis->setRange(-0.5, static_cast<double>(most) - 0.5);
    // From 1 (the map unchanged) down to the lowest value drawn: Spearman and SSIM can fall below 0.
    double lowest = 0.0;
    for (int g = 0; g < sanity_->graphCount(); ++g) {
        bool found = false;
        const QCPRange values = sanity_->graph(g)->getValueRange(found);
        if (found)
            lowest = std::min(lowest, values.lower);
    }
    sanity_->yAxis->setRange(lowest - 0.1, 1.05);
    sanity_->replot(QCustomPlot::rpQueuedReplot);
    QString note = tr("%1 randomisation; a map that stays near 1 does not depend on the weights.")
                       .arg(QString::fromStdString(result_->sanityMode));
    if (!result_->notRandomised.empty())
        note += tr(" Not randomised (initialiser unknown): %1.")
                    .arg(QString::fromStdString(result_->notRandomised.front())
                        + (result_->notRandomised.size() > 1 ? tr(" and %1 more").arg(result_->notRandomised.size() - 1)
                                                             : QString()));
    if (!result_->afterProbe.empty())
        note += tr(" %n layer(s) after the probe's left as they are: they cannot change its score.", "",
            static_cast<int>(result_->afterProbe.size()));
    sanityNote_->setText(note);
}

void AttributionPlots::drawRandomisedMaps()
{
    while (QLayoutItem* item = mapsRow_->takeAt(0)) {
        delete item->widget();
        delete item;
    }
    if (!result_ || result_->images.empty())
        return;
    const auto found = result_->sanity.find(mapsMethod_->currentText().toStdString());
    if (found == result_->sanity.end())
        return;
    const WorkbenchImage& image = result_->images.front();
    const auto add = [&](const FloatTensor& map, const QString& caption) {
        double low = INFINITY, high = -INFINITY;
        for (float v : map.values) {
            low = std::min<double>(low, v);
            high = std::max<double>(high, v);
        }
        const MapScale scale = scaleOf(low, high);
        const std::vector<float> unit = scaledToUnit(map, scale.low, scale.high);
        const QImage overlay = overlayImage(image.picture, unit.data(), map.shape[1], map.shape[0],
            scale.diverging ? ColorMap::CoolWarm : ColorMap::Viridis, 0.65f);
        auto* cell = new QLabel;
        cell->setPixmap(QPixmap::fromImage(overlay.scaled(88, 88, Qt::KeepAspectRatio, Qt::SmoothTransformation)));
        cell->setToolTip(caption);
        auto* box = new QWidget;
        auto* column = new QVBoxLayout(box);
        column->setContentsMargins(0, 0, 0, 0);
        column->addWidget(cell);
        auto* text = new QLabel;
        text->setFixedWidth(96);
        text->setText(text->fontMetrics().elidedText(caption, Qt::ElideLeft, 94)); // the path's end tells layers apart
        text->setToolTip(caption);
        column->addWidget(text);
        mapsRow_->addWidget(box);
    };
    add(result_->maps.at(found->first).front().importance, tr("original"));
    for (const auto& layer : found->second)
        add(layer.firstImage, QString::fromStdString(layer.layer));
    mapsRow_->addStretch(1);
}

} // namespace torchscope
