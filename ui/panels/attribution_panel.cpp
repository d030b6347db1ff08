#include "panels/attribution_panel.h"

#include "attribution/attribution_names.h"
#include "common/atomic_file.h"
#include "common/memory_budget.h"
#include "dialogs/save_dialog.h"
#include "document/document.h"
#include "export/manifest.h"
#include "jobs/run_controller.h"
#include "jobs/workbench_jobs.h"
#include "panels/job_setup_column.h"
#include "panels/setup_and_results.h"
#include "relevance/relevance_rules.h"
#include "views/attribution_grid.h"
#include "views/attribution_plots.h"
#include "views/color_bar.h"
#include "views/layer_combo.h"
#include "views/number_item.h"
#include "views/plot_file.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFile>
#include <QFormLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMenu>
#include <QPushButton>
#include <QSpinBox>
#include <QTabWidget>
#include <QTableWidget>

#include <algorithm>
#include <cmath>

namespace torchscope {
namespace {

QListWidget* checkList()
{
    auto* list = new QListWidget;
    list->setSelectionMode(QAbstractItemView::NoSelection);
    return list;
}

// Tall enough for `rows` rows without scrolling, and no taller.
void fitRows(QListWidget* list, int rows)
{
    const int row = list->sizeHintForRow(0) > 0 ? list->sizeHintForRow(0) : list->fontMetrics().height() + 4;
    list->setFixedHeight(rows * row + 2 * list->frameWidth() + 2);
}

void addCheckItem(QListWidget* list, const QString& name, const QString& about, bool checked)
{
    auto* item = new QListWidgetItem(name, list);
    item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsUserCheckable);
    item->setCheckState(checked ? Qt::Checked : Qt::Unchecked);
    item->setToolTip(about);
}

// The summary table empty but for a line that says what comes there and when.
void showSummaryNote(QTableWidget* table, const QString& note)
{
    table->setSortingEnabled(false);
    table->clear();
    table->setColumnCount(1);
    table->setHorizontalHeaderLabels({QString()});
    table->setRowCount(1);
    auto* item = new QTableWidgetItem(note);
    item->setFlags(Qt::ItemIsEnabled);
    item->setForeground(Qt::gray);
    table->setItem(0, 0, item);
}

// A summary cell: the mean ± the standard deviation, sorted by the mean (NumberItem).
NumberItem* summaryItem(double mean, double sd)
{
    return new NumberItem(mean,
        !std::isfinite(mean)    ? QString("—")
            : std::isfinite(sd) ? QString("%1 ± %2").arg(scaleNumber(mean), scaleNumber(sd))
                                : scaleNumber(mean));
}

} // namespace

AttributionPanel::AttributionPanel(Document* document, RunController* controller, QWidget* parent)
    : QWidget(parent)
    , document_(document)
    , controller_(controller)
    , column_(new JobSetupColumn)
    , methods_(checkList())
    , layer_(new QComboBox)
    , target_(new QSpinBox)
    , steps_(new QSpinBox)
    , baseline_(new QComboBox)
    , samples_(new QSpinBox)
    , noise_(new QDoubleSpinBox)
    , metrics_(checkList())
    , sanity_(new QComboBox)
    , composite_(new QComboBox)
    , attentionRule_(new QComboBox)
    , relevanceRules_(new QLineEdit)
    , sharedScale_(new QCheckBox(tr("One colour scale per method")))
    , start_(new QPushButton(tr("Explain the Images")))
    , grid_(new AttributionGrid)
    , summary_(new QTableWidget)
    , plots_(new AttributionPlots(this))
{
    buildForm();
    column_->addStartButton(start_);
    buildExportMenu();
    summary_->setSortingEnabled(true);
    summary_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    summary_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    // Three views of one result, each with the tab's whole height: the maps, the summary, the plots.
    auto* results = new QTabWidget;
    results->addTab(grid_, tr("Maps and their metrics"));
    results->addTab(summary_, tr("Summary over the images"));
    results->addTab(plots_->curvesPage(), tr("Deletion and insertion"));
    results->addTab(plots_->sanityPage(), tr("Sanity check"));
    layOutSetupAndResults(this, column_, results);
    connectJobs();
    resetForModel();
}

void AttributionPanel::buildForm()
{
    // The names as the CLI takes them, from core (attribution/attribution_names.h).
    for (const auto& m : attributionMethodChoices())
        addCheckItem(methods_, QString::fromStdString(m.name), tr(m.about.c_str()), m.byDefault);
    for (const auto& m : faithfulnessMetricChoices())
        addCheckItem(metrics_, QString::fromStdString(m.name), tr(m.about.c_str()), m.byDefault);
    fitRows(methods_, 9);
    fitRows(metrics_, metrics_->count());
    makeLayerCombo(layer_);
    layer_->setMinimumContentsLength(14);
    layer_->setToolTip(tr("The layer of the CAMs (Grad-CAM … EigenCAM): a convolutional output or ViT tokens"));
    target_->setRange(-1, 1000000);
    target_->setSpecialValueText(tr("each image's prediction"));
    target_->setValue(-1);
    steps_->setRange(2, 4096);
    steps_->setValue(32);
    steps_->setToolTip(tr("Integrated Gradients: points on the path (Gauss–Legendre)"));
    baseline_->addItems({"black", "blur", "noise"});
    baseline_->setToolTip(tr("Integrated Gradients' start: zeros, the image blurred, or uniform noise"));
    samples_->setRange(1, 4096);
    samples_->setValue(16);
    samples_->setToolTip(tr("SmoothGrad, SmoothGrad², VarGrad: noisy copies per image"));
    noise_->setRange(0.0, 5.0);
    noise_->setSingleStep(0.05);
    noise_->setValue(0.15);
    noise_->setToolTip(tr("Their noise's σ as a fraction of the image's range"));
    sanity_->addItem(tr("none"), QString());
    sanity_->addItem(tr("cascading randomisation"), QString("cascading"));
    sanity_->addItem(tr("independent randomisation"), QString("independent"));
    sanity_->setToolTip(tr("Adebayo et al. (2018): re-initialise the layers (a copy of the model) and compare each "
                           "map with the original"));
    for (const auto& name : compositeNames())
        composite_->addItem(QString::fromStdString(name));
    composite_->setToolTip(tr("LRP: the rules by layer, as Zennit's composites; epsilon0 (ε = 0 everywhere) is "
                              "LXT's Gradient × Input for transformers"));
    attentionRule_->addItem(tr("CP-LRP (weights held fixed)"), QString("cp"));
    attentionRule_->addItem(tr("AttnLRP (uniform rule)"), QString("attnlrp"));
    attentionRule_->setToolTip(tr("LRP through attention, as LXT defines it: CP-LRP passes relevance through the "
                                  "values only; AttnLRP through queries, keys and values"));
    relevanceRules_->setPlaceholderText(tr("e.g. type:Linear=gamma:0.05 features.0=flat"));
    relevanceRules_->setToolTip(tr("LRP: PATH=RULE overrides, separated by spaces or semicolons (a module, a glob as "
                                   "layer3.*, type:NAME); rules: epsilon[:e], gamma[:g], zplus, alphabeta[:a:b], "
                                   "flat, wsquare, zbox, norm, gradient"));
    sharedScale_->setChecked(true);
    sharedScale_->setToolTip(tr("Off: each map on its own scale, its range written under it"));

    QFormLayout* form = column_->form();
    form->addRow(tr("Methods:"), methods_);
    form->addRow(tr("Layer (CAMs):"), layer_);
    form->addRow(tr("Target:"), target_);
    form->addRow(tr("IG steps:"), steps_);
    form->addRow(tr("IG baseline:"), baseline_);
    form->addRow(tr("Noisy samples:"), samples_);
    form->addRow(tr("Noise σ:"), noise_);
    form->addRow(tr("Metrics:"), metrics_);
    form->addRow(tr("Sanity check:"), sanity_);
    form->addRow(tr("LRP composite:"), composite_);
    form->addRow(tr("LRP attention:"), attentionRule_);
    form->addRow(tr("LRP rules:"), relevanceRules_);
    column_->addBelow(sharedScale_);
    // A method's own settings show while it is ticked: the form fits a laptop's height without
    // scrolling past rows that do nothing.
    connect(methods_, &QListWidget::itemChanged, this, &AttributionPanel::showMethodRows);
    showMethodRows();
}

void AttributionPanel::showMethodRows()
{
    const QStringList methods = ticked(methods_);
    bool layer = false;
    for (const auto& m : attributionMethodChoices())
        layer = layer || (m.layer && methods.contains(QString::fromStdString(m.name)));
    const bool integrated = methods.contains("integrated_gradients");
    const bool noisy
        = methods.contains("smoothgrad") || methods.contains("smoothgrad_sq") || methods.contains("vargrad");
    const bool lrp = methods.contains("lrp");
    QFormLayout* form = column_->form();
    form->setRowVisible(layer_, layer);
    form->setRowVisible(steps_, integrated);
    form->setRowVisible(baseline_, integrated);
    form->setRowVisible(samples_, noisy);
    form->setRowVisible(noise_, noisy);
    form->setRowVisible(composite_, lrp);
    form->setRowVisible(attentionRule_, lrp);
    form->setRowVisible(relevanceRules_, lrp);
}

void AttributionPanel::buildExportMenu()
{
    const QString pictures = tr("PNG image (*.png);;PDF (*.pdf)");
    column_->addExportMenu(
        {
            {tr("Maps as .npz, .pt or .safetensors…"), tr("Export Attribution Maps"), "attributions.npz",
                tr("NumPy (*.npz);;PyTorch (*.pt);;safetensors (*.safetensors)"), QString()},
            {tr("Metrics and Sanity Check as JSON…"), tr("Export Metrics"), "metrics.json", tr("JSON (*.json)"),
                QString()},
            {tr("Curves Plot as PNG or PDF…"), tr("Export Curves"), "curves.png", pictures, "curves"},
            {tr("Sanity Plot as PNG or PDF…"), tr("Export Sanity Plot"), "sanity.png", pictures, "sanity"},
        },
        [this](const QString& path, const QString& plot) { return exportTo(path, plot); });
    connect(column_, &JobSetupColumn::exportFailed, this, &AttributionPanel::failed);
}

void AttributionPanel::connectJobs()
{
    connect(start_, &QPushButton::clicked, this, &AttributionPanel::start);
    connect(sharedScale_, &QCheckBox::toggled, grid_, &AttributionGrid::setSharedScale);
    connect(document_, &Document::modelChanged, this, &AttributionPanel::resetForModel);
    connect(document_, &Document::modulesChanged, this, &AttributionPanel::fillLayers);
    column_->watchInputs(document_, ImagesInput | SetupInput); // the target is the tab's own
    connect(column_, &JobSetupColumn::cancelRequested, this, &AttributionPanel::showSoFar);
}

void AttributionPanel::fillLayers()
{
    const QString current = layer_->currentText();
    const QSignalBlocker block(layer_);
    layer_->clear();
    // Modules with maps or tokens (after a dry run), else every module. The default: the last one
    // near the top of the tree (a path of at most two parts) whose map is larger than 1 x 1: the
    // last convolutional block, where CAMs are usually taken (ResNet's layer4.1, DenseNet's norm5).
    QString last, deepest;
    for (const auto& m : document_->model().modules) {
        if (m.path.empty() || !m.called)
            continue;
        const auto& shape = m.outputShapes.empty() ? std::vector<int64_t>{} : m.outputShapes.front();
        if (shape.size() == 4 || shape.size() == 3 || m.outputShapes.empty()) {
            layer_->addItem(QString::fromStdString(m.path));
            const bool spatial = shape.size() == 3 || (shape.size() == 4 && shape[2] * shape[3] > 1);
            if (spatial && std::count(m.path.begin(), m.path.end(), '.') <= 1)
                last = QString::fromStdString(m.path);
            else if (spatial)
                deepest = QString::fromStdString(m.path);
        }
    }
    if (last.isEmpty())
        last = deepest;
    layer_->setCurrentText(!current.isEmpty() && document_->module(current) ? current : last);
}

void AttributionPanel::resetForModel()
{
    column_->cancelJob();
    result_.reset();
    soFar_.reset();
    fillLayers();
    grid_->clear(tr("Tick methods, then Explain the Images: each image of the strip gets a row, each method a "
                    "column, with its metrics under the map."));
    plots_->clear();
    showSummaryNote(summary_, tr("Each method's metrics over the images"));
    column_->reset(document_->modelPath().isEmpty()
            ? tr("Open a model and add images to explain them.")
            : tr("Explains the strip's images with every ticked method; the metrics score each map."));
}

QStringList AttributionPanel::ticked(const QListWidget* list) const
{
    QStringList names;
    for (int i = 0; i < list->count(); ++i)
        if (list->item(i)->checkState() == Qt::Checked)
            names << list->item(i)->text();
    return names;
}

void AttributionPanel::start()
{
    const QStringList methods = ticked(methods_);
    QString problem;
    if (document_->modelPath().isEmpty())
        problem = tr("Open a model first.");
    else if (document_->images().isEmpty())
        problem = tr("Add images to the window (drop them on the strip) to explain them.");
    else if (methods.isEmpty())
        problem = tr("Tick at least one method.");
    bool needsLayer = false;
    for (const auto& m : attributionMethodChoices())
        needsLayer = needsLayer || (m.layer && methods.contains(QString::fromStdString(m.name)));
    if (problem.isEmpty() && needsLayer && layer_->currentText().isEmpty())
        problem = tr("The CAMs need a layer: pick one under Layer.");
    std::vector<std::string> relevanceRules;
    try {
        relevanceRules = RuleOverride::parseList(relevanceRules_->text().toStdString());
    } catch (const std::exception& e) {
        if (problem.isEmpty())
            problem = tr("LRP rules: %1").arg(QString::fromStdString(e.what()));
    }
    if (!problem.isEmpty()) {
        column_->summary()->setText(problem);
        return;
    }
    AttributionWorkbenchRequest request;
    request.memoryBytes = defaultMemoryBudget(); // as the CLI's default --memory-mb
    for (const auto& image : document_->images())
        request.images.push_back(image.toStdString());
    request.setup = document_->setup();
    for (const auto& method : methods)
        request.methods.push_back(method.toStdString());
    if (needsLayer)
        request.layer = layer_->currentText().toStdString();
    request.targetClass = target_->value();
    request.steps = steps_->value();
    request.baseline = baseline_->currentText().toStdString();
    request.samples = samples_->value();
    request.noise = noise_->value();
    for (const auto& metric : ticked(metrics_))
        request.metrics.push_back(metric.toStdString());
    request.sanityMode = sanity_->currentData().toString().toStdString();
    request.composite = composite_->currentText().toStdString();
    request.attentionRule = attentionRule_->currentData().toString().toStdString();
    request.relevanceRules = relevanceRules;
    shown_ = request;
    JobHandle* job = controller_->start<AttributionAnalysis>(request, this);
    connect(job, &JobHandle::progress, this, [this, job](qint64, qint64, const QString& stage) {
        if (job->isRunning() && column_->cancelButton()->isEnabled())
            column_->summary()->setText(
                tr("Working: %1… (%2 of %n image(s) shown)", nullptr, static_cast<int>(shown_.images.size()))
                    .arg(stage)
                    .arg(soFar_ ? soFar_->images.size() : 0));
    });
    connect(job, &JobHandle::partDelivered, this, [this, job] { addImage(*job->part<WorkbenchImageResult>()); });
    connect(job, &JobHandle::succeeded, this, [this, job] { showResult(job->result<AttributionWorkbenchResult>()); });
    connect(job, &JobHandle::failed, this, [this] {
        grid_->clear(tr("Explaining the images failed: the reason is on the left and in the log."));
        showSummaryNote(summary_, tr("No summary: explaining failed"));
    });
    // Each image's maps come as soon as they are made (with their metrics); the summary, the curves
    // and the sanity check when the job ends.
    result_.reset();
    soFar_ = std::make_shared<AttributionWorkbenchResult>();
    soFar_->methods = request.methods;
    grid_->clear(tr("Explaining %n image(s)… each image's maps appear here as soon as they are made; the progress is "
                    "on the left.",
        nullptr, static_cast<int>(request.images.size())));
    plots_->clear();
    showSummaryNote(summary_, tr("Explaining… the metrics' means come at the end"));
    column_->exportButton()->setEnabled(false);
    column_->follow(job, tr("Explaining %n image(s)…", nullptr, static_cast<int>(request.images.size())));
}

void AttributionPanel::addImage(const WorkbenchImageResult& part)
{
    if (!soFar_ || part.index != soFar_->images.size())
        return; // of a job no longer shown
    soFar_->images.push_back(part.image);
    for (const auto& [method, map] : part.maps)
        soFar_->maps[method].push_back(map);
    grid_->setResult(soFar_);
}

void AttributionPanel::showSoFar()
{
    // Cancel answers at once with the images finished; the job's own result follows when it stops.
    if (!soFar_ || soFar_->images.empty())
        return;
    soFar_->cancelled = true;
    result_ = soFar_;
    column_->exportButton()->setEnabled(true);
    column_->summary()->setText(tr("Cancelling: %n image(s) explained are shown and can be exported; the step in "
                                   "progress stops at its next batch.",
        nullptr, static_cast<int>(soFar_->images.size())));
}

void AttributionPanel::showResult(const AttributionWorkbenchResultPtr& result)
{
    soFar_.reset();
    result_ = result;
    column_->finish(result->cancelled);
    column_->exportButton()->setEnabled(!result->images.empty());
    if (result->images.empty())
        grid_->clear(result->cancelled ? tr("Cancelled before the first image was explained.")
                                       : tr("No image could be explained: the reasons are on the left."));
    else
        grid_->setResult(result);
    plots_->setResult(result);
    fillSummary();
    QString text = result->cancelled ? tr("Cancelled: %n image(s) explained; what finished is shown.", nullptr,
                       static_cast<int>(result->images.size()))
                                     : tr("%n image(s) explained.", nullptr, static_cast<int>(result->images.size()));
    if (result->cancelled && !shown_.metrics.empty()) { // say which maps have their metrics
        QStringList scored;
        for (const auto& [method, metrics] : result->summary)
            if (std::any_of(metrics.begin(), metrics.end(), [](const auto& m) { return std::isfinite(m.second.mean); }))
                scored << QString::fromStdString(method); // at least one image scored
        text += "\n"
            + (scored.isEmpty() ? tr("No map was scored before the cancel.")
                                : tr("Metrics were computed for: %1.").arg(scored.join(", ")));
    }
    for (const auto& [image, why] : result->failures)
        text += "\n" + tr("Left out %1: %2").arg(QString::fromStdString(image), QString::fromStdString(why));
    column_->summary()->setText(text);
    Q_EMIT finished(result);
}

void AttributionPanel::fillSummary()
{
    summary_->setSortingEnabled(false);
    summary_->clear();
    QStringList metrics;
    for (const auto& [method, perMetric] : result_->summary)
        for (const auto& [metric, summary] : perMetric)
            if (!metrics.contains(QString::fromStdString(metric)))
                metrics << QString::fromStdString(metric);
    const bool sanity = !result_->sanity.empty();
    QStringList headers{tr("method")};
    headers << metrics;
    if (sanity)
        headers << tr("Spearman |map| after all layers") << tr("SSIM after all layers");
    summary_->setColumnCount(headers.size());
    summary_->setHorizontalHeaderLabels(headers);
    for (int c = 1; c <= metrics.size(); ++c) // which way is better, on hover
        if (const NamedChoice* m = findChoice(faithfulnessMetricChoices(), metrics[c - 1].toStdString()))
            summary_->horizontalHeaderItem(c)->setToolTip(tr(m->about.c_str()));
    summary_->setRowCount(static_cast<int>(result_->methods.size()));
    for (int row = 0; row < static_cast<int>(result_->methods.size()); ++row) {
        const std::string& method = result_->methods[static_cast<size_t>(row)];
        summary_->setItem(row, 0, new QTableWidgetItem(QString::fromStdString(method)));
        const auto perMetric = result_->summary.find(method);
        for (int c = 0; c < metrics.size(); ++c) {
            double mean = NAN, sd = NAN;
            if (perMetric != result_->summary.end())
                if (const auto found = perMetric->second.find(metrics[c].toStdString());
                    found != perMetric->second.end()) {
                    mean = found->second.mean;
                    sd = found->second.sd;
                }
            summary_->setItem(row, c + 1, summaryItem(mean, sd));
        }
        if (sanity) {
            const auto layers = result_->sanity.find(method);
            const bool has = layers != result_->sanity.end() && !layers->second.empty();
            summary_->setItem(row, static_cast<int>(metrics.size()) + 1,
                summaryItem(has ? layers->second.back().spearmanAbs : NAN, NAN));
            summary_->setItem(
                row, static_cast<int>(metrics.size()) + 2, summaryItem(has ? layers->second.back().ssim : NAN, NAN));
        }
    }
    summary_->setSortingEnabled(true);
}

QString AttributionPanel::exportTo(const QString& path, const QString& plot) const
{
    if (!result_)
        return tr("Nothing to export: explain the images first.");
    if (plot == "curves")
        return savePlotFile(plots_->curvesPlot(), path, 900, 560);
    if (plot == "sanity")
        return savePlotFile(plots_->sanityPlot(), path, 900, 560);
    try {
        if (path.endsWith(".json", Qt::CaseInsensitive)) {
            writeFileAtomically(path.toStdString(), attributionMeasuresJson(result_->measures));
            return {};
        }
        ExportManifest manifest = windowManifest("Attribution > Export", controller_->modelKey(), shown_.setup, {}, {});
        for (const auto& image : result_->images) {
            manifest.images.push_back({image.image});
            manifest.targets.push_back(image.targetDescription);
        }
        manifest.settings = {{"layer", shown_.layer}, {"steps", std::to_string(shown_.steps)},
            {"baseline", shown_.baseline}, {"samples", std::to_string(shown_.samples)},
            {"noise", std::to_string(shown_.noise)}, {"sanity", shown_.sanityMode}};
        if (std::find(shown_.methods.begin(), shown_.methods.end(), "lrp") != shown_.methods.end()) {
            manifest.settings.emplace_back("composite", shown_.composite);
            manifest.settings.emplace_back("attention_rule", shown_.attentionRule);
            for (const auto& rule : shown_.relevanceRules)
                manifest.settings.emplace_back("rule", rule);
        }
        writeAttributionMaps(path.toStdString(), *result_, &manifest);
    } catch (const std::exception& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

} // namespace torchscope
