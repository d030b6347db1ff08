#include "panels/concepts_panel.h"

#include "concepts/synthetic_concepts.h"
#include "document/document.h"
#include "jobs/job_handle.h"
#include "jobs/job_runner.h"
#include "jobs/run_controller.h"
#include "panels/job_setup_column.h"
#include "panels/setup_and_results.h"
#include "views/empty_plot.h"
#include "views/layer_combo.h"
#include "views/number_item.h"
#include "views/overlay_image.h"
#include "views/plot_colours.h"
#include "views/qcustomplot_include.h"

#include <QComboBox>
#include <QDir>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QSpinBox>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace torchscope {
namespace {

constexpr int TopImageSize = 120; // a top image's longer side
const QColor MaskLine(0, 230, 255), RegionLine(255, 220, 0);

// The map's value at each pixel of a width × height picture (bilinear, align_corners false: as the
// dissection upsamples it).
std::vector<float> upsampled(const FloatTensor& map, int width, int height)
{
    const auto mh = static_cast<int>(map.shape[0]), mw = static_cast<int>(map.shape[1]);
    std::vector<float> out(static_cast<size_t>(width) * height);
    const auto at = [&](int y, int x) { return map.values[static_cast<size_t>(y) * mw + x]; };
    for (int y = 0; y < height; ++y) {
        const double sy = std::clamp((y + 0.5) * mh / height - 0.5, 0.0, mh - 1.0);
        const int y0 = static_cast<int>(sy), y1 = std::min(y0 + 1, mh - 1);
        for (int x = 0; x < width; ++x) {
            const double sx = std::clamp((x + 0.5) * mw / width - 0.5, 0.0, mw - 1.0);
            const int x0 = static_cast<int>(sx), x1 = std::min(x0 + 1, mw - 1);
            const double fy = sy - y0, fx = sx - x0;
            out[static_cast<size_t>(y) * width + x] = static_cast<float>(
                (1 - fy) * ((1 - fx) * at(y0, x0) + fx * at(y0, x1)) + fy * ((1 - fx) * at(y1, x0) + fx * at(y1, x1)));
        }
    }
    return out;
}

// A top image as NetDissect draws it: the unit's region (its map above its threshold) bright, the
// rest dimmed, its edge in yellow; the concept's mask outlined in cyan.
QImage thumbnail(const FloatTensor& picture, const FloatTensor& map, double threshold, const QImage& mask)
{
    QImage image = overlayImage(picture, nullptr, 0, 0, ColorMap::Inferno, 0.0f).convertToFormat(QImage::Format_RGB32);
    const int width = image.width(), height = image.height();
    const auto edge = [&](const auto& inside, int y, int x) {
        return inside(y, x) && (!inside(y - 1, x) || !inside(y + 1, x) || !inside(y, x - 1) || !inside(y, x + 1));
    };
    if (map.shape.size() == 2 && std::isfinite(threshold)) {
        const std::vector<float> values = upsampled(map, width, height);
        const auto inside = [&](int y, int x) {
            return y >= 0 && x >= 0 && y < height && x < width
                && values[static_cast<size_t>(y) * width + x] > threshold;
        };
        QImage drawn = image;
        for (int y = 0; y < height; ++y)
            for (int x = 0; x < width; ++x) {
                if (edge(inside, y, x))
                    drawn.setPixelColor(x, y, RegionLine);
                else if (!inside(y, x))
                    drawn.setPixelColor(x, y, image.pixelColor(x, y).darker(250));
            }
        image = drawn;
    }
    if (!mask.isNull()) {
        const QImage scaled = mask.scaled(width, height, Qt::IgnoreAspectRatio, Qt::FastTransformation)
                                  .convertToFormat(QImage::Format_Grayscale8);
        const auto inside = [&](int y, int x) {
            return y >= 0 && x >= 0 && y < height && x < width && scaled.constScanLine(y)[x] > 0;
        };
        for (int y = 0; y < height; ++y)
            for (int x = 0; x < width; ++x)
                if (edge(inside, y, x))
                    image.setPixelColor(x, y, MaskLine);
    }
    return image;
}

QString number(double value)
{
    return std::isfinite(value) ? QString::number(value, 'g', 3) : QStringLiteral("—");
}

} // namespace

ConceptsPanel::ConceptsPanel(Document* document, RunController* controller, QWidget* parent)
    : QWidget(parent)
    , document_(document)
    , controller_(controller)
    , column_(new JobSetupColumn)
    , layer_(new QComboBox)
    , concepts_(new QLineEdit)
    , units_(new QComboBox)
    , unitsFile_(new QLineEdit)
    , method_(new QComboBox)
    , formula_(new QSpinBox)
    , dissect_(new QPushButton(tr("Dissect")))
    , makeSet_(new QPushButton(tr("Draw a Set")))
    , plot_(new QCustomPlot)
    , table_(new QTableWidget)
    , search_(new QLineEdit)
    , unitTitle_(new QLabel)
    , topRow_(new QHBoxLayout)
    , caption_(new QLabel)
{
    buildForm();
    dissect_->setToolTip(
        tr("Scores every unit of the layer against every concept of the set: IoU of its top 0.5 % "
           "region with the concept's masks (NetDissect), and the AUC of its mean per image (INVERT)"));
    makeSet_->setToolTip(tr("Draws a concept set with exact masks (coloured shapes and textures over noise) at the "
                            "model's input size into the Concepts folder (or ~/torchscope-concepts)"));
    column_->addStartButton(dissect_);
    column_->addStartButton(makeSet_);
    layOutSetupAndResults(this, column_, buildResults());
    connect(dissect_, &QPushButton::clicked, this, &ConceptsPanel::dissect);
    connect(makeSet_, &QPushButton::clicked, this, &ConceptsPanel::makeSyntheticSet);
    connect(document_, &Document::modelChanged, this, &ConceptsPanel::resetForModel);
    connect(document_, &Document::modulesChanged, this,
        [this] { fillLayerCombo(layer_, document_->model().modules, layerPicked_, 4); });
    connect(layer_, &QComboBox::activated, this, [this] { layerPicked_ = true; });
    connect(search_, &QLineEdit::textChanged, this, &ConceptsPanel::filterTable);
    connect(units_, &QComboBox::currentIndexChanged, this, [this] {
        const QString kind = units_->currentData().toString();
        unitsFile_->setEnabled(kind != "channels");
        unitsFile_->setPlaceholderText(kind == "sae" ? tr("a saved SAE's folder")
                : kind == "probe"                    ? tr("a probe file (.pt)")
                                                     : QString());
    });
    connect(table_, &QTableWidget::currentCellChanged, this, [this](int row) {
        if (row >= 0 && table_->item(row, 0))
            pickUnit(table_->item(row, 0)->data(Qt::UserRole + 1).toLongLong());
    });
    connect(table_, &QTableWidget::cellDoubleClicked, this, [this](int row) {
        if (!result_ || result_->layers.empty() || !table_->item(row, 0))
            return;
        const int unit = table_->item(row, 0)->data(Qt::UserRole + 1).toInt();
        if (resultUnits_ == "channels")
            Q_EMIT channelPageRequested(QString::fromStdString(result_->layers.front().layer), unit);
        else if (resultUnits_.startsWith("sae:"))
            Q_EMIT latentPageRequested(resultUnits_.mid(4), unit);
    });
    column_->watchInputs(document_, SetupInput);
    resetForModel();
}

void ConceptsPanel::buildForm()
{
    makeLayerCombo(layer_);
    layer_->setMinimumContentsLength(14);
    layer_->setToolTip(tr("The layer whose units are dissected: a map's channels, a ViT's token features over its "
                          "patch grid; an SAE or probe reads its own layer"));
    concepts_->setPlaceholderText(tr("a concept set's folder"));
    concepts_->setToolTip(tr("images/ and masks/CONCEPT/ (Draw a Set makes one), a folder per concept (INVERT "
                             "only), or Broden's index.csv"));
    units_->addItem(tr("channels"), QString("channels"));
    units_->addItem(tr("SAE latents"), QString("sae"));
    units_->addItem(tr("probe directions"), QString("probe"));
    units_->setToolTip(tr("What a unit is: the layer's channels, a saved SAE's latents, or a linear probe's "
                          "directions (per position)"));
    unitsFile_->setEnabled(false);
    method_->addItem(tr("IoU and INVERT"), QString("both"));
    method_->addItem(tr("IoU (masks)"), QString("iou"));
    method_->addItem(tr("INVERT (AUC)"), QString("invert"));
    formula_->setRange(1, 3);
    formula_->setValue(static_cast<int>(DissectionRequest{}.formulaLength));
    formula_->setToolTip(tr("IoU: the best formula of up to this many concepts (AND, OR, AND NOT) per unit; 1: "
                            "single concepts"));
    QFormLayout* form = column_->form();
    form->addRow(tr("Layer:"), layer_);
    column_->addFolderRow(tr("Concepts:"), concepts_, tr("A Concept Set"));
    form->addRow(tr("Units:"), units_);
    form->addRow(tr("SAE / probe:"), unitsFile_);
    form->addRow(tr("Measure:"), method_);
    form->addRow(tr("Formulas:"), formula_);
    caption_->setWordWrap(true);
    caption_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    column_->addBelow(caption_);
}

QWidget* ConceptsPanel::buildResults()
{
    plot_->setMinimumHeight(150);
    const DissectionRequest defaults; // the thresholds a dissection from this tab takes
    plot_->setToolTip(tr("Interpretable units per concept category: by IoU (its best IoU above %1) and by INVERT "
                         "(AUC ≥ %2 with a corrected p below %3)")
                          .arg(defaults.iouThreshold)
                          .arg(defaults.aucThreshold)
                          .arg(defaults.alpha));
    table_->setColumnCount(7);
    table_->setHorizontalHeaderLabels(
        {tr("Unit"), tr("IoU label"), tr("IoU"), tr("Formula"), tr("INVERT label"), tr("AUC"), tr("p")});
    table_->horizontalHeaderItem(6)->setToolTip(tr("Bonferroni-corrected over units × concepts"));
    table_->setSortingEnabled(true);
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->setSelectionMode(QAbstractItemView::SingleSelection);
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->verticalHeader()->setVisible(false);
    table_->horizontalHeader()->setStretchLastSection(true);
    table_->setMinimumHeight(120);
    table_->setToolTip(tr("Double-click a channel for its page"));
    search_->setPlaceholderText(tr("search by concept"));
    search_->setClearButtonEnabled(true);
    auto* tableBox = new QWidget;
    auto* tableColumn = new QVBoxLayout(tableBox);
    tableColumn->setContentsMargins(0, 0, 0, 0);
    tableColumn->addWidget(search_);
    tableColumn->addWidget(table_, 1);

    topRow_->setSpacing(6);
    topRow_->addStretch(1);
    auto* strip = new QWidget;
    strip->setLayout(topRow_);
    auto* stripScroll = new QScrollArea;
    stripScroll->setWidget(strip);
    stripScroll->setWidgetResizable(true);
    stripScroll->setFrameShape(QFrame::NoFrame);
    stripScroll->setMinimumHeight(TopImageSize + 24);
    unitTitle_->setWordWrap(true);
    auto* page = new QWidget;
    auto* pageColumn = new QVBoxLayout(page);
    pageColumn->setContentsMargins(4, 0, 4, 0);
    pageColumn->addWidget(unitTitle_);
    pageColumn->addWidget(stripScroll, 1);

    auto* results = new QSplitter(Qt::Vertical);
    results->addWidget(plot_);
    results->addWidget(tableBox);
    results->addWidget(page);
    results->setStretchFactor(0, 2);
    results->setStretchFactor(1, 4);
    results->setStretchFactor(2, 2);
    results->setChildrenCollapsible(false);
    return results;
}

void ConceptsPanel::resetForModel()
{
    column_->cancelJob();
    result_.reset();
    unit_ = -1;
    layerPicked_ = false;
    fillLayerCombo(layer_, document_->model().modules, false, 4);
    showEmptyPlot(plot_,
        document_->modelPath().isEmpty() ? tr("Open a model: find which of its units detect which concepts")
                                         : tr("Pick a layer and a concept set (or Draw a Set), then Dissect"));
    table_->setRowCount(0);
    unitTitle_->clear();
    caption_->clear();
    for (QLabel* label : tops_)
        label->deleteLater();
    tops_.clear();
    column_->reset(tr("Network dissection: which units of a layer detect which concepts of a set whose images "
                      "are labelled (and, for IoU, masked)."));
}

void ConceptsPanel::dissect()
{
    const QString kind = units_->currentData().toString();
    const QString file = unitsFile_->text().trimmed();
    QString problem;
    if (document_->modelPath().isEmpty())
        problem = tr("Open a model first.");
    else if (kind == "channels" && layer_->currentText().isEmpty())
        problem = tr("Pick the layer to dissect.");
    else if (!QFileInfo(concepts_->text().trimmed()).isDir())
        problem = tr("Give a concept set's folder, or Draw a Set.");
    else if (kind != "channels" && !QFileInfo::exists(file))
        problem = kind == "sae" ? tr("Give a saved SAE's folder (the Features tab trains one).")
                                : tr("Give a probe file (the Probes tab saves one).");
    if (!problem.isEmpty()) {
        column_->summary()->setText(problem);
        return;
    }
    DissectionRequest request;
    request.setup = document_->setup();
    if (kind == "channels" || !layer_->currentText().isEmpty())
        request.layers = {layer_->currentText().toStdString()};
    if (kind != "channels")
        request.layers.clear(); // the SAE's or probe's own layer
    request.concepts = concepts_->text().trimmed().toStdString();
    request.units = kind == "channels" ? std::string("channels") : (kind + ":" + file).toStdString();
    request.method = parseDissectionMethod(method_->currentData().toString().toStdString());
    request.formulaLength = formula_->value();
    JobHandle* job = controller_->start<DissectionAnalysis>(request, this);
    connect(job, &JobHandle::succeeded, this, [this, job, units = QString::fromStdString(request.units)] {
        resultUnits_ = units;
        showResult(job->result<DissectionResult>());
    });
    if (!result_) { // the plot's note follows the job (a result shown stays until the new one comes)
        showEmptyPlot(plot_, tr("Dissecting…\nthe units interpretable by category appear when it is done"));
        connect(job, &JobHandle::finished, this, [this] {
            if (!result_)
                showEmptyPlot(plot_, tr("Pick a layer and a concept set (or Draw a Set), then Dissect"));
        });
    }
    column_->follow(job, tr("Dissecting… (the first pass ranks the images, the second counts the pixels)"));
}

void ConceptsPanel::makeSyntheticSet()
{
    QString out = concepts_->text().trimmed();
    if (out.isEmpty() || (QFileInfo::exists(out) && !QDir(out).isEmpty()))
        for (int n = 1; out.isEmpty() || (QFileInfo::exists(out) && !QDir(out).isEmpty()); ++n)
            out = QDir::home().filePath(
                n == 1 ? QString("torchscope-concepts") : QString("torchscope-concepts-%1").arg(n));
    SyntheticConceptsRequest request;
    request.out = out.toStdString();
    request.images = 200;
    const Preprocessing& p = document_->setup().preprocessing;
    request.height = p.outputHeight() >= 32 ? p.outputHeight() : 224;
    request.width = p.outputWidth() >= 32 ? p.outputWidth() : 224;
    JobHandle* job = controller_->startTask(
        tr("Drawing a concept set"), JobLane::Batch, [request](ModelSource&) { makeSyntheticConcepts(request); }, this);
    connect(job, &JobHandle::succeeded, this, [this, out, request] {
        column_->finish(false);
        concepts_->setText(out);
        column_->summary()->setText(tr("Drew %1 images of %2 × %3 with colours, shapes and textures into %4.")
                                        .arg(request.images)
                                        .arg(request.width)
                                        .arg(request.height)
                                        .arg(out));
        Q_EMIT setMade(out);
    });
    column_->follow(job, tr("Drawing %1 images into %2…").arg(request.images).arg(out));
}

void ConceptsPanel::showResult(const std::shared_ptr<const DissectionResult>& result)
{
    column_->finish(result->cancelled);
    result_ = result;
    unit_ = -1;
    QStringList lines;
    for (const auto& layer : result->layers) {
        layer_->setCurrentText(QString::fromStdString(layer.layer));
        QString line = tr("%1: %2 %3 over %4 images")
                           .arg(QString::fromStdString(layer.layer))
                           .arg(layer.unitResults.size())
                           .arg(QString::fromStdString(layer.units))
                           .arg(result->imagesRead);
        if (result->method != DissectionMethod::Invert)
            line += tr("; %1 interpretable by IoU").arg(layer.interpretableIou);
        if (result->method != DissectionMethod::Iou)
            line += tr("; %1 by INVERT").arg(layer.interpretableInvert);
        lines << line;
    }
    for (const auto& warning : result->warnings)
        lines << QString::fromStdString(warning);
    if (!result->failures.empty())
        lines << tr("%n image(s) could not be read (see the log).", nullptr, static_cast<int>(result->failures.size()));
    if (result->cancelled)
        lines << tr("Cancelled: what was complete is shown.");
    column_->summary()->setText(lines.join('\n'));
    drawCategories();
    fillTable();
    if (table_->rowCount() > 0)
        table_->selectRow(0);
    Q_EMIT dissected(result);
}

void ConceptsPanel::drawCategories()
{
    plot_->clearPlottables();
    plot_->clearItems();
    if (!result_ || result_->layers.empty())
        return;
    const DissectedLayer& layer = result_->layers.front();
    prepareFilledPlot(plot_);
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    QVector<double> keys, iou, invert;
    for (size_t c = 0; c < layer.categories.size(); ++c) {
        keys << static_cast<double>(c + 1);
        iou << static_cast<double>(layer.categories[c].iou);
        invert << static_cast<double>(layer.categories[c].invert);
        ticker->addTick(static_cast<double>(c + 1), QString::fromStdString(layer.categories[c].category));
    }
    auto* group = new QCPBarsGroup(plot_);
    const QList<std::tuple<QString, QVector<double>*, QColor, bool>> series{
        {tr("IoU > %1").arg(result_->iouThreshold), &iou, seriesColour(0), result_->method != DissectionMethod::Invert},
        {tr("INVERT"), &invert, QColor(255, 127, 14), result_->method != DissectionMethod::Iou}};
    for (const auto& [name, values, colour, shown] : series) {
        if (!shown)
            continue;
        auto* bars = new QCPBars(plot_->xAxis, plot_->yAxis);
        bars->setName(name);
        bars->setData(keys, *values, true);
        bars->setWidth(0.35);
        bars->setBrush(colour);
        bars->setPen(QPen(colour.darker(120)));
        bars->setBarsGroup(group);
    }
    plot_->xAxis->setTicker(ticker);
    plot_->xAxis->setRange(0.4, static_cast<double>(keys.size()) + 0.6);
    auto counts = QSharedPointer<QCPAxisTickerFixed>::create(); // whole units
    counts->setTickStep(1.0);
    counts->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
    plot_->yAxis->setTicker(counts);
    plot_->yAxis->rescale();
    plot_->yAxis->setRange(0.0, std::max(1.0, std::ceil(plot_->yAxis->range().upper * 1.15)));
    plot_->yAxis->setLabel(tr("units of %1").arg(layer.unitResults.size()));
    plot_->legend->setVisible(true);
    plot_->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);
    plot_->replot();
}

void ConceptsPanel::fillTable()
{
    table_->setSortingEnabled(false);
    table_->setRowCount(0);
    if (!result_ || result_->layers.empty())
        return;
    const DissectedLayer& layer = result_->layers.front();
    for (const auto& unit : layer.unitResults) {
        const int row = table_->rowCount();
        table_->insertRow(row);
        const QString name = unit.unit < static_cast<int64_t>(layer.unitNames.size())
            ? QString::fromStdString(layer.unitNames[static_cast<size_t>(unit.unit)])
            : QString::number(unit.unit);
        auto* index = new NumberItem(static_cast<double>(unit.unit), name);
        index->setData(Qt::UserRole + 1, static_cast<qlonglong>(unit.unit));
        table_->setItem(row, 0, index);
        const bool hasIou = !unit.iou.empty();
        auto* iouLabel = new QTableWidgetItem(hasIou ? QString::fromStdString(unit.iou.front().label) : QString());
        if (unit.interpretableIou)
            iouLabel->setFont([f = iouLabel->font()]() mutable {
                f.setBold(true);
                return f;
            }());
        table_->setItem(row, 1, iouLabel);
        table_->setItem(row, 2,
            new NumberItem(
                hasIou ? unit.iou.front().score : -1.0, hasIou ? number(unit.iou.front().score) : QStringLiteral("—")));
        table_->setItem(row, 3,
            new QTableWidgetItem(unit.formula.label.empty()
                    ? QString()
                    : QString("%1 (%2)").arg(QString::fromStdString(unit.formula.label), number(unit.formula.score))));
        const bool hasInvert = !unit.invert.empty();
        auto* invertLabel
            = new QTableWidgetItem(hasInvert ? QString::fromStdString(unit.invert.front().label) : QString());
        if (unit.interpretableInvert)
            invertLabel->setFont([f = invertLabel->font()]() mutable {
                f.setBold(true);
                return f;
            }());
        table_->setItem(row, 4, invertLabel);
        table_->setItem(row, 5,
            new NumberItem(hasInvert ? unit.invert.front().score : -1.0,
                hasInvert ? number(unit.invert.front().score) : QStringLiteral("—")));
        table_->setItem(row, 6,
            new NumberItem(hasInvert ? unit.invert.front().pValue : 2.0,
                hasInvert ? number(unit.invert.front().pValue) : QStringLiteral("—")));
    }
    table_->setSortingEnabled(true);
    table_->sortByColumn(result_->method == DissectionMethod::Invert ? 5 : 2, Qt::DescendingOrder);
    table_->resizeColumnsToContents();
    filterTable();
}

void ConceptsPanel::filterTable()
{
    const QString wanted = search_->text().trimmed();
    for (int row = 0; row < table_->rowCount(); ++row) {
        bool match = wanted.isEmpty();
        for (const int column : {1, 3, 4})
            match = match
                || (table_->item(row, column)
                    && table_->item(row, column)->text().contains(wanted, Qt::CaseInsensitive));
        table_->setRowHidden(row, !match);
    }
}

QString ConceptsPanel::labelsOf(const QString& layer, int64_t unit, const QString& units) const
{
    // The same kind of unit, and for an SAE or a probe the same file (its path as the OS resolves it).
    const auto sameUnits = [this, &units] {
        if (units == "channels" || resultUnits_ == "channels")
            return units == resultUnits_;
        const QString kind = units.section(':', 0, 0);
        const QString file = QFileInfo(units.section(':', 1)).canonicalFilePath();
        return kind == resultUnits_.section(':', 0, 0) && !file.isEmpty()
            && file == QFileInfo(resultUnits_.section(':', 1)).canonicalFilePath();
    };
    if (!result_ || !sameUnits())
        return {};
    for (const auto& dissected : result_->layers) {
        if (QString::fromStdString(dissected.layer) != layer || unit < 0
            || unit >= static_cast<int64_t>(dissected.unitResults.size()))
            continue;
        const DissectedUnit& u = dissected.unitResults[static_cast<size_t>(unit)];
        QStringList parts;
        QStringList iou;
        for (const auto& c : u.iou)
            iou << QString("%1 %2").arg(QString::fromStdString(c.label), number(c.score));
        if (!iou.isEmpty())
            parts << tr("IoU%1: %2").arg(u.interpretableIou ? tr(" (interpretable)") : QString(), iou.join(", "));
        if (!u.formula.label.empty())
            parts << tr("formula: %1 %2").arg(QString::fromStdString(u.formula.label), number(u.formula.score));
        QStringList invert;
        for (const auto& c : u.invert)
            invert << tr("%1 AUC %2 (p %3)").arg(QString::fromStdString(c.label), number(c.score), number(c.pValue));
        if (!invert.isEmpty())
            parts << tr("INVERT: %1%2")
                         .arg(invert.join(", "), u.interpretableInvert ? tr(" (interpretable)") : QString());
        return parts.join('\n');
    }
    return {};
}

void ConceptsPanel::pickUnit(int64_t unit)
{
    unit_ = unit;
    drawUnit();
}

void ConceptsPanel::drawUnit()
{
    for (QLabel* label : tops_)
        label->deleteLater();
    tops_.clear();
    if (!result_ || result_->layers.empty() || unit_ < 0
        || unit_ >= static_cast<int64_t>(result_->layers.front().unitResults.size()))
        return;
    const DissectedLayer& layer = result_->layers.front();
    const DissectedUnit& unit = layer.unitResults[static_cast<size_t>(unit_)];
    const bool hasIou = !unit.iou.empty();
    const std::string conceptId = hasIou ? unit.iou.front().label
        : !unit.invert.empty()           ? unit.invert.front().label
                                         : "";
    unitTitle_->setText(tr("<b>%1 %2</b> of %3 — its top images: its region (the top %4 % of its values) bright "
                           "and edged in yellow, the mask of <b>%5</b> outlined in cyan")
                            .arg(QString::fromStdString(layer.units).chopped(1).toHtmlEscaped())
                            .arg(unit.unit)
                            .arg(QString::fromStdString(layer.layer).toHtmlEscaped())
                            .arg(100.0 * result_->quantile, 0, 'g', 2)
                            .arg(QString::fromStdString(conceptId).toHtmlEscaped()));
    const bool masks = result_->layout == "masks" && !conceptId.empty();
    for (const auto& top : unit.topImages) {
        const QString path = QString::fromStdString(result_->images[static_cast<size_t>(top.image)]);
        const FloatTensor picture = pictureFromFile(path, TopImageSize);
        auto* label = new QLabel;
        label->setAlignment(Qt::AlignCenter);
        if (!picture.empty()) {
            QImage mask;
            if (masks)
                mask = QImage(
                    QDir(QString::fromStdString(result_->concepts))
                        .filePath(QString("masks/%1/%2.png")
                                      .arg(QString::fromStdString(conceptId), QFileInfo(path).completeBaseName())));
            label->setPixmap(
                QPixmap::fromImage(thumbnail(picture, top.map, hasIou ? unit.threshold : std::nan(""), mask)));
        } else {
            label->setText(tr("(unreadable)"));
        }
        label->setToolTip(tr("%1\nlargest value %2").arg(path).arg(top.value, 0, 'g', 4));
        topRow_->insertWidget(topRow_->count() - 1, label);
        tops_ << label;
    }
    caption_->setText(labelsOf(QString::fromStdString(layer.layer), unit.unit));
}

} // namespace torchscope
