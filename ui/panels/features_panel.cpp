#include "panels/features_panel.h"

#include "document/document.h"
#include "jobs/job_handle.h"
#include "jobs/run_controller.h"
#include "panels/job_setup_column.h"
#include "panels/setup_and_results.h"
#include "views/empty_plot.h"
#include "views/layer_combo.h"
#include "views/number_item.h"
#include "views/overlay_image.h"
#include "views/plot_colours.h"
#include "views/qcustomplot_include.h"
#include "visualize/channel_visualization.h"

#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QImage>
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

constexpr int LatentImageSize = 112; // a top image's longer side

} // namespace

FeaturesPanel::FeaturesPanel(Document* document, RunController* controller, QWidget* parent)
    : QWidget(parent)
    , document_(document)
    , controller_(controller)
    , column_(new JobSetupColumn)
    , layer_(new QComboBox)
    , images_(new QLineEdit)
    , expansion_(new QSpinBox)
    , k_(new QSpinBox)
    , positions_(new QComboBox)
    , batch_(new QSpinBox)
    , sae_(new QLineEdit)
    , train_(new QPushButton(tr("Train")))
    , measure_(new QPushButton(tr("Measure Latents")))
    , evaluate_(new QPushButton(tr("Evaluate")))
    , evaluation_(new QLabel)
    , curves_(new QCustomPlot)
    , table_(new QTableWidget)
    , search_(new QLineEdit)
    , pageTitle_(new QLabel)
    , topRow_(new QHBoxLayout)
    , histogram_(new QCustomPlot)
    , pageCaption_(new QLabel)
    , editOp_(new QComboBox)
    , editValue_(new QDoubleSpinBox)
    , splice_(new QPushButton(tr("Splice into the Run")))
    , unsplice_(new QPushButton(tr("Remove")))
    , visualize_(new QPushButton(tr("Visualise")))
    , direction_(new QLabel)
{
    buildForm();
    train_->setToolTip(tr("Trains a TopK SAE on the layer over the folder; it is saved beside the folder, in "
                          "FOLDER-saes/MODEL/LAYER"));
    measure_->setToolTip(tr("Each latent's frequency, top images with its map and ablation effect, over the folder"));
    column_->addStartButton(train_);
    evaluate_->setToolTip(tr("How good the SAE is over the folder: FVU, L0, dead and dense latents, and the model's "
                             "predictions with its reconstruction spliced in against clean and against the layer "
                             "zero-ablated (KL, top-1 agreement, the loss recovered)"));
    column_->addStartButton(measure_);
    column_->addStartButton(evaluate_);
    layOutSetupAndResults(this, column_, buildResults());
    connect(train_, &QPushButton::clicked, this, &FeaturesPanel::train);
    connect(measure_, &QPushButton::clicked, this, &FeaturesPanel::measureLatents);
    connect(evaluate_, &QPushButton::clicked, this, &FeaturesPanel::evaluate);
    // The evaluation is of the SAE in the field: another SAE (typed, or trained) makes it stale.
    connect(sae_, &QLineEdit::textChanged, evaluation_, &QLabel::clear);
    connect(document_, &Document::modelChanged, this, &FeaturesPanel::resetForModel);
    connect(document_, &Document::modulesChanged, this, &FeaturesPanel::fillLayers);
    connect(layer_, &QComboBox::activated, this, [this] { layerPicked_ = true; });
    connect(search_, &QLineEdit::textChanged, this, &FeaturesPanel::filterTable);
    connect(table_, &QTableWidget::currentCellChanged, this, [this](int row) {
        if (row >= 0 && table_->item(row, 0))
            pickLatent(table_->item(row, 0)->data(Qt::UserRole).toLongLong());
    });
    connect(splice_, &QPushButton::clicked, this, &FeaturesPanel::spliceLatent);
    connect(visualize_, &QPushButton::clicked, this, &FeaturesPanel::visualizeDirection);
    connect(unsplice_, &QPushButton::clicked, this, [this] {
        if (latents_) // the SAE's edits there; the layer's other edits (channels zeroed, patches) stay
            document_->clearEdits(QString::fromStdString(latents_->layer), EditKind::SaeLatents);
        unsplice_->setEnabled(false);
    });
    connect(editOp_, &QComboBox::currentIndexChanged, this, [this] {
        const QString op = editOp_->currentData().toString();
        editValue_->setEnabled(op != "ablate");
        editValue_->setValue(op == "scale" ? 2.0 : 5.0);
    });
    column_->watchInputs(document_, SetupInput);
    resetForModel();
}

void FeaturesPanel::buildForm()
{
    makeLayerCombo(layer_);
    layer_->setMinimumContentsLength(14);
    layer_->setToolTip(tr("The layer whose activations the SAE reads: every position of a map [N, C, H, W] is one "
                          "C-vector, a vision transformer's tokens one vector each"));
    images_->setPlaceholderText(tr("a folder of images"));
    images_->setToolTip(tr("The images whose activations train the SAE and measure its latents (class "
                           "subfolders allowed); streamed, nothing is written but the SAE"));
    expansion_->setRange(1, 256);
    expansion_->setValue(16);
    expansion_->setToolTip(tr("Latents per input dimension (d_sae = expansion × d_in)"));
    k_->setRange(1, 4096);
    k_->setValue(32);
    k_->setToolTip(tr("Active latents per vector (TopK)"));
    positions_->addItem(tr("every position"), QString("all"));
    positions_->addItem(tr("class token"), QString("class"));
    positions_->addItem(tr("patch tokens"), QString("patches"));
    positions_->addItem(tr("64 per image"), QString("sample:64"));
    positions_->setToolTip(tr("Which vectors: every position; a ViT's class token; its patch tokens (not the "
                              "class or register tokens); 64 positions per image at random"));
    batch_->setRange(16, 1 << 20);
    batch_->setValue(4096);
    batch_->setToolTip(tr("Vectors per training step"));
    sae_->setPlaceholderText(tr("trained here, or a saved SAE's folder"));
    sae_->setToolTip(tr("A saved SAE (SAELens's layout: sae_weights.safetensors and cfg.json): Train fills it in; "
                        "Measure Latents reads it"));
    QFormLayout* form = column_->form();
    form->addRow(tr("Layer:"), layer_);
    column_->addFolderRow(tr("Images:"), images_, tr("Images for the SAE"));
    form->addRow(tr("Expansion:"), expansion_);
    form->addRow(tr("k:"), k_);
    form->addRow(tr("Vectors:"), positions_);
    form->addRow(tr("Batch:"), batch_);
    column_->addFolderRow(tr("SAE:"), sae_, tr("A Saved SAE"));
    evaluation_->setWordWrap(true);
    evaluation_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    column_->addBelow(evaluation_);
    pageCaption_->setWordWrap(true);
    pageCaption_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    column_->addBelow(pageCaption_);
    // Splicing the latent shown into the window's run.
    editOp_->setToolTip(tr("Ablate the latent, scale its code, or steer: add to its code (its decoder direction "
                           "times the value, whether it fires or not)"));
    auto* edit = new QFormLayout;
    auto* editRow = new QHBoxLayout;
    editRow->addWidget(editOp_);
    editRow->addWidget(editValue_, 1);
    edit->addRow(tr("Edit the latent:"), editRow);
    auto* spliceRow = new QHBoxLayout;
    spliceRow->addWidget(splice_);
    spliceRow->addWidget(unsplice_);
    spliceRow->addStretch(1);
    edit->addRow(QString(), spliceRow);
    column_->addBelow(edit);
}

QWidget* FeaturesPanel::buildResults()
{
    curves_->setMinimumHeight(150);
    curves_->setToolTip(tr("The training as it runs: FVU (the share of the variance the SAE misses) and the dead "
                           "latents' share on the left, L0 / k on the right, by vectors seen"));
    table_->setColumnCount(6);
    table_->setHorizontalHeaderLabels(
        {tr("Latent"), tr("Frequency"), tr("Largest"), tr("Mean"), tr("Supports"), tr("Effect (Δp)")});
    table_->horizontalHeaderItem(5)->setToolTip(
        tr("The change in the probability of each top image's prediction when the latent is ablated there"));
    table_->setSortingEnabled(true);
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->setSelectionMode(QAbstractItemView::SingleSelection);
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->verticalHeader()->setVisible(false);
    table_->horizontalHeader()->setStretchLastSection(true);
    table_->setMinimumHeight(120);
    search_->setPlaceholderText(tr("search by the class a latent supports"));
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
    stripScroll->setMinimumHeight(LatentImageSize + 48);
    histogram_->setMinimumSize(150, 110);
    histogram_->setToolTip(tr("The latent's activations where it fires, in log10 bins"));
    pageTitle_->setWordWrap(true);
    for (const auto& [op, text] :
        {std::pair<QString, QString>{"ablate", tr("ablate")}, {"scale", tr("scale by")}, {"steer", tr("steer by")}})
        editOp_->addItem(text, op);
    editValue_->setRange(-1000.0, 1000.0);
    editValue_->setDecimals(2);
    editValue_->setEnabled(false);
    splice_->setToolTip(tr("Runs the window's images with the SAE spliced in at its layer and this latent edited; "
                           "the SAE's error term is kept, so only the edit changes the output"));
    // One row (the window's centre must fit 760 px at 1280 × 800, whatever tab it shows, and the page
    // must show whole in a short window): the top images, the direction's image over its button, the
    // histogram. The splice controls sit in the setup column, under the latent's caption.
    auto* directionColumn = new QVBoxLayout;
    directionColumn->addWidget(direction_, 0, Qt::AlignHCenter);
    directionColumn->addWidget(visualize_);
    directionColumn->addStretch(1);
    auto* pageRow = new QHBoxLayout;
    pageRow->addWidget(stripScroll, 1);
    pageRow->addLayout(directionColumn);
    pageRow->addWidget(histogram_);
    auto* page = new QWidget;
    auto* pageColumn = new QVBoxLayout(page);
    pageColumn->setContentsMargins(4, 0, 4, 0);
    pageColumn->addWidget(pageTitle_);
    pageColumn->addLayout(pageRow, 1);
    auto* pageScroll = new QScrollArea;
    pageScroll->setWidget(page);
    pageScroll->setWidgetResizable(true);
    pageScroll->setFrameShape(QFrame::NoFrame);

    auto* results = new QSplitter(Qt::Vertical);
    results->addWidget(curves_);
    results->addWidget(tableBox);
    results->addWidget(pageScroll);
    results->setStretchFactor(0, 2);
    results->setStretchFactor(1, 3);
    results->setStretchFactor(2, 3);
    results->setChildrenCollapsible(false);
    return results;
}

void FeaturesPanel::fillLayers()
{
    fillLayerCombo(layer_, document_->model().modules, layerPicked_, 4);
}

void FeaturesPanel::resetForModel()
{
    column_->cancelJob();
    steps_.clear();
    latents_.reset();
    latent_ = -1;
    layerPicked_ = false;
    fillLayers();
    showEmptyPlot(curves_,
        document_->modelPath().isEmpty()
            ? tr("Open a model: train sparse autoencoders on its layers, and see what their latents represent")
            : tr("Pick a layer and an image folder, then Train"));
    table_->setRowCount(0);
    pageTitle_->clear();
    pageCaption_->clear();
    evaluation_->clear();
    for (QLabel* label : tops_)
        label->deleteLater();
    tops_.clear();
    showEmptyPlot(histogram_, QString());
    splice_->setEnabled(false);
    unsplice_->setEnabled(false);
    visualize_->setEnabled(false);
    direction_->clear();
    column_->reset(tr("Sparse autoencoders: the features a layer represents, one latent each. Train one on a "
                      "layer, or give a saved SAE and Measure Latents."));
}

void FeaturesPanel::train()
{
    QString problem;
    if (document_->modelPath().isEmpty())
        problem = tr("Open a model first.");
    else if (layer_->currentText().isEmpty())
        problem = tr("Pick the layer the SAE reads.");
    else if (images_->text().trimmed().isEmpty() || !QFileInfo(images_->text().trimmed()).isDir())
        problem = tr("Give a folder of images to train on.");
    if (!problem.isEmpty()) {
        column_->summary()->setText(problem);
        return;
    }
    SaeTrainingRequest request;
    request.layers = {layer_->currentText().toStdString()};
    request.images = images_->text().trimmed().toStdString();
    request.setup = document_->setup();
    request.expansion = expansion_->value();
    request.k = k_->value();
    request.positions = positions_->currentData().toString().toStdString();
    request.batch = batch_->value();
    // Beside the images: FOLDER/../FOLDER-saes/MODEL, one SAE folder per layer.
    const QFileInfo folder(images_->text().trimmed());
    const QString out = QDir(folder.absolutePath())
                            .filePath(folder.fileName() + "-saes/" + QFileInfo(document_->modelPath()).baseName());
    request.out = out.toStdString();
    steps_.clear();
    showEmptyPlot(curves_, tr("Training… the curves appear after the first step (the shuffle buffer fills first)."));
    JobHandle* job = controller_->start<SaeTrainingAnalysis>(request, this);
    connect(job, &JobHandle::partDelivered, this, [this, job] { addStep(*job->part<SaeTrainingPart>()); });
    connect(job, &JobHandle::succeeded, this, [this, job] { showTraining(job->result<SaeTrainingResult>()); });
    column_->follow(job, tr("Training an SAE on %1…").arg(layer_->currentText()));
}

void FeaturesPanel::addStep(const SaeTrainingPart& part)
{
    steps_.push_back(part);
    QVector<double> vectors, fvu, dead, l0;
    for (const auto& step : steps_) {
        vectors << static_cast<double>(step.metrics.vectors);
        fvu << step.metrics.fvu;
        dead << step.metrics.deadFraction;
        l0 << step.metrics.l0 / static_cast<double>(std::max(1, k_->value()));
    }
    curves_->clearItems();
    curves_->clearPlottables();
    prepareFilledPlot(curves_);
    const QList<std::pair<QString, QColor>> series{
        {tr("FVU"), seriesColour(0)}, {tr("dead share"), QColor(214, 39, 40)}, {tr("L0 / k"), QColor(44, 160, 44)}};
    const QList<QVector<double>*> values{&fvu, &dead, &l0};
    for (int i = 0; i < 3; ++i) {
        QCPGraph* graph = curves_->addGraph(curves_->xAxis, i == 2 ? curves_->yAxis2 : curves_->yAxis);
        graph->setName(series[i].first);
        graph->setPen(QPen(series[i].second, 2));
        graph->setData(vectors, *values[i], true);
    }
    curves_->xAxis->setLabel(tr("vectors seen"));
    curves_->yAxis->setLabel(tr("FVU, dead share"));
    curves_->yAxis2->setVisible(true);
    curves_->yAxis2->setLabel(tr("L0 / k"));
    curves_->legend->setVisible(true);
    // Bottom left: FVU falls from the top left and L0 / k stays near the top.
    curves_->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignBottom | Qt::AlignLeft);
    curves_->rescaleAxes();
    curves_->yAxis->setRangeLower(0.0);
    curves_->yAxis2->setRange(0.0, 1.05);
    curves_->replot();
    column_->summary()->setText(tr("%1 of %2 images, %3 vectors: FVU %4, L0 %5, dead %6 %")
                                    .arg(part.images)
                                    .arg(part.totalImages)
                                    .arg(part.metrics.vectors)
                                    .arg(part.metrics.fvu, 0, 'g', 3)
                                    .arg(part.metrics.l0, 0, 'g', 3)
                                    .arg(100.0 * part.metrics.deadFraction, 0, 'g', 3));
}

void FeaturesPanel::showTraining(const std::shared_ptr<const SaeTrainingResult>& result)
{
    column_->finish(result->cancelled);
    QStringList lines;
    for (const auto& layer : result->layers) {
        if (layer.folder.empty())
            continue;
        sae_->setText(QString::fromStdString(layer.folder));
        lines << tr("%1: %2 latents on %3-d vectors, %4 steps; saved in %5")
                     .arg(QString::fromStdString(layer.layer))
                     .arg(layer.dSae)
                     .arg(layer.dIn)
                     .arg(layer.steps.size())
                     .arg(QString::fromStdString(layer.folder));
        if (!layer.steps.empty() && layer.layer == result->layers.front().layer) {
            // Every step, not only those handed over after a batch of images (the last ones come at the end).
            steps_.clear();
            const int64_t images = result->imagesBefore + result->images;
            for (size_t i = 0; i + 1 < layer.steps.size(); ++i)
                steps_.push_back(SaeTrainingPart{layer.layer, images, images, layer.steps[i]});
            addStep(SaeTrainingPart{layer.layer, images, images, layer.steps.back()});
        }
    }
    for (const auto& warning : result->warnings)
        lines << QString::fromStdString(warning);
    if (result->cancelled)
        lines << tr("Cancelled: what was trained is saved (the CLI's sae train --resume goes on from it).");
    lines << tr("Measure Latents to see what they represent.");
    column_->summary()->setText(lines.join('\n'));
    Q_EMIT trained(result);
}

bool FeaturesPanel::saeJobCanStart(const QString& overWhat)
{
    QString problem;
    if (document_->modelPath().isEmpty())
        problem = tr("Open a model first.");
    else if (!QFileInfo(sae_->text().trimmed() + "/cfg.json").exists())
        problem = tr("Train an SAE first, or give a saved SAE's folder (it holds cfg.json).");
    else if (!QFileInfo(images_->text().trimmed()).isDir())
        problem = tr("Give a folder of images to %1.").arg(overWhat);
    if (!problem.isEmpty())
        column_->summary()->setText(problem);
    return problem.isEmpty();
}

void FeaturesPanel::measureLatents()
{
    if (!saeJobCanStart(tr("measure the latents over")))
        return;
    SaeLatentsRequest request;
    request.sae = sae_->text().trimmed().toStdString();
    request.images = images_->text().trimmed().toStdString();
    request.setup = document_->setup();
    request.top = 8;
    request.effects = 64;
    JobHandle* job = controller_->start<SaeLatentsAnalysis>(request, this);
    connect(job, &JobHandle::succeeded, this, [this, job] { showLatents(job->result<SaeLatentsResult>()); });
    column_->follow(job, tr("Measuring the latents over the folder…"));
}

void FeaturesPanel::evaluate()
{
    if (!saeJobCanStart(tr("evaluate the SAE over")))
        return;
    SaeEvaluationRequest request;
    request.sae = sae_->text().trimmed().toStdString();
    request.images = images_->text().trimmed().toStdString();
    request.setup = document_->setup();
    evaluation_->clear();
    JobHandle* job = controller_->start<SaeEvaluationAnalysis>(request, this);
    connect(job, &JobHandle::succeeded, this, [this, job] { showEvaluation(job->result<SaeEvaluationResult>()); });
    column_->follow(job, tr("Evaluating the SAE over the folder…"));
}

void FeaturesPanel::showEvaluation(const std::shared_ptr<const SaeEvaluationResult>& result)
{
    column_->finish(result->cancelled);
    layer_->setCurrentText(QString::fromStdString(result->layer)); // the SAE's own layer
    const auto g = [](double value) { return QString::number(value, 'g', 3); };
    const auto percent = [](double value) { return QString::number(100.0 * value, 'f', 1) + " %"; };
    QStringList rows{tr("<b>%1</b> (%2): %3 images, %4 vectors")
                         .arg(QString::fromStdString(result->layer).toHtmlEscaped(),
                             QString::fromStdString(result->positions).toHtmlEscaped())
                         .arg(result->images)
                         .arg(result->vectors),
        tr("FVU %1 (explained variance %2), L0 %3 of k %4")
            .arg(g(result->fvu), g(result->explainedVariance), g(result->l0), QString::number(result->k)),
        tr("dead latents %1, dense %2, of %3").arg(result->deadLatents).arg(result->denseLatents).arg(result->dSae)};
    if (result->downstream) {
        rows << tr("spliced in: KL %1 nats, top-1 agreement %2").arg(g(result->klSpliced), percent(result->top1Spliced))
             << tr("zero-ablated: KL %1 nats, top-1 agreement %2").arg(g(result->klZero), percent(result->top1Zero))
             << tr("loss recovered %1 (cross-entropy against %2)")
                    .arg(std::isfinite(result->lossRecovered) ? percent(result->lossRecovered) : tr("undefined"),
                        QString::fromStdString(result->lossAgainst).toHtmlEscaped());
    } else {
        rows << tr("no class scores out of the model: no downstream figures");
    }
    for (const auto& warning : result->warnings)
        rows << QString::fromStdString(warning).toHtmlEscaped();
    if (result->cancelled)
        rows << tr("Cancelled: the figures are over the images done.");
    evaluation_->setText(rows.join("<br>"));
    column_->summary()->setText(tr("Evaluated %1 over %n image(s).", nullptr, static_cast<int>(result->images))
                                    .arg(QString::fromStdString(result->sae)));
    Q_EMIT evaluated(result);
}

void FeaturesPanel::showLatents(const std::shared_ptr<const SaeLatentsResult>& result)
{
    column_->finish(result->cancelled);
    latents_ = result;
    layer_->setCurrentText(QString::fromStdString(result->layer)); // the SAE's own layer
    int64_t alive = 0;
    for (const auto& latent : result->latents)
        alive += latent.fires > 0 ? 1 : 0;
    QStringList lines{tr("%1: %2 latents, %3 fire on %n image(s) (%4 vectors); effects of the 64 most frequent.",
        nullptr, static_cast<int>(result->images.size()))
                          .arg(QString::fromStdString(result->layer))
                          .arg(result->latents.size())
                          .arg(alive)
                          .arg(result->vectors)};
    for (const auto& warning : result->warnings)
        lines << QString::fromStdString(warning);
    if (result->cancelled)
        lines << tr("Cancelled: the figures are over the images done.");
    column_->summary()->setText(lines.join('\n'));
    fillTable();
    if (table_->rowCount() > 0)
        table_->selectRow(0);
    Q_EMIT latentsShown(result);
}

void FeaturesPanel::fillTable()
{
    table_->setSortingEnabled(false);
    table_->setRowCount(0);
    if (!latents_)
        return;
    const auto& labels = latents_->labels;
    for (const auto& latent : latents_->latents) {
        if (latent.fires == 0)
            continue;
        const int row = table_->rowCount();
        table_->insertRow(row);
        auto* index = new NumberItem(static_cast<double>(latent.index), QString::number(latent.index));
        index->setData(Qt::UserRole, static_cast<qlonglong>(latent.index));
        table_->setItem(row, 0, index);
        table_->setItem(
            row, 1, new NumberItem(latent.frequency, QString::number(100.0 * latent.frequency, 'f', 2) + " %"));
        table_->setItem(row, 2, new NumberItem(latent.maxActivation, QString::number(latent.maxActivation, 'g', 4)));
        table_->setItem(row, 3, new NumberItem(latent.meanActive, QString::number(latent.meanActive, 'g', 4)));
        QString supports;
        if (latent.hasEffect)
            supports = latent.supports >= 0 && latent.supports < static_cast<int64_t>(labels.size())
                ? QString::fromStdString(labels[static_cast<size_t>(latent.supports)])
                : tr("class %1").arg(latent.supports);
        table_->setItem(row, 4, new QTableWidgetItem(supports));
        const double effect = latent.hasEffect ? latent.probabilityAfter - latent.probabilityBefore : 0.0;
        table_->setItem(
            row, 5, new NumberItem(effect, latent.hasEffect ? QString::number(effect, 'g', 2) : QStringLiteral("—")));
    }
    table_->setSortingEnabled(true);
    table_->sortByColumn(1, Qt::DescendingOrder);
    table_->resizeColumnsToContents();
    filterTable();
}

void FeaturesPanel::filterTable()
{
    const QString wanted = search_->text().trimmed();
    for (int row = 0; row < table_->rowCount(); ++row) {
        const QTableWidgetItem* supports = table_->item(row, 4);
        table_->setRowHidden(
            row, !wanted.isEmpty() && !(supports && supports->text().contains(wanted, Qt::CaseInsensitive)));
    }
}

void FeaturesPanel::pickLatent(int64_t latent)
{
    latent_ = latent;
    drawPage();
}

void FeaturesPanel::showLatentOf(const QString& sae, int64_t latent)
{
    const QString wanted = QFileInfo(sae).canonicalFilePath();
    if (!latents_ || wanted.isEmpty()
        || QFileInfo(QString::fromStdString(latents_->sae)).canonicalFilePath() != wanted) {
        sae_->setText(sae);
        column_->summary()->setText(
            tr("Latent %1's page needs this SAE's latents: give an image folder and Measure Latents.").arg(latent));
        return;
    }
    for (int row = 0; row < table_->rowCount(); ++row)
        if (table_->item(row, 0)->data(Qt::UserRole).toLongLong() == latent) {
            table_->setRowHidden(row, false);
            table_->selectRow(row); // its page, through the table's current row
            table_->scrollToItem(table_->item(row, 0));
            break;
        }
    if (latent_ != latent)
        pickLatent(latent); // a latent that never fired has no row
}

void FeaturesPanel::drawPage()
{
    for (QLabel* label : tops_)
        label->deleteLater();
    tops_.clear();
    if (!latents_ || latent_ < 0 || latent_ >= static_cast<int64_t>(latents_->latents.size())) {
        splice_->setEnabled(false);
        return;
    }
    const SaeLatent& latent = latents_->latents[static_cast<size_t>(latent_)];
    pageTitle_->setText(tr("<b>Latent %1</b> of %2 — fires on %3 % of the vectors, largest %4")
                            .arg(latent.index)
                            .arg(QString::fromStdString(latents_->layer))
                            .arg(100.0 * latent.frequency, 0, 'g', 3)
                            .arg(latent.maxActivation, 0, 'g', 4));
    for (const auto& top : latent.top) {
        const QString path = QString::fromStdString(latents_->images[static_cast<size_t>(top.image)]);
        const FloatTensor picture = pictureFromFile(path, LatentImageSize);
        auto* label = new QLabel;
        label->setAlignment(Qt::AlignCenter);
        if (!picture.empty()) {
            const std::vector<float> unit = scaledToUnit(top.map, 0.0, std::max(latent.maxActivation, 1e-12));
            const QImage overlay
                = overlayImage(picture, unit.data(), top.map.shape[1], top.map.shape[0], ColorMap::Inferno, 0.6f);
            label->setPixmap(QPixmap::fromImage(overlay));
        } else {
            label->setText(tr("(unreadable)"));
        }
        label->setToolTip(tr("%1\nlargest activation %2 at row %3, column %4 of the %5 × %6 grid")
                              .arg(path)
                              .arg(top.value, 0, 'g', 4)
                              .arg(top.row)
                              .arg(top.column)
                              .arg(latents_->gridHeight)
                              .arg(latents_->gridWidth));
        topRow_->insertWidget(topRow_->count() - 1, label);
        tops_ << label;
    }
    // The histogram: the latent's activations where it fires.
    histogram_->clearPlottables();
    histogram_->clearItems();
    prepareFilledPlot(histogram_);
    auto* bars = new QCPBars(histogram_->xAxis, histogram_->yAxis);
    QVector<double> keys, counts;
    const auto& edges = latents_->histogramEdges;
    for (size_t b = 0; b < latent.histogram.size() && b + 1 < edges.size(); ++b) {
        keys << 0.5 * (std::log10(edges[b]) + std::log10(edges[b + 1]));
        counts << static_cast<double>(latent.histogram[b]);
    }
    bars->setData(keys, counts, true);
    bars->setWidth(keys.size() > 1 ? keys[1] - keys[0] : 0.1);
    bars->setBrush(seriesColour(0));
    histogram_->xAxis->setLabel(tr("log10 activation"));
    histogram_->yAxis->setLabel(tr("vectors"));
    histogram_->rescaleAxes();
    histogram_->yAxis->setRangeLower(0.0);
    histogram_->replot();
    QStringList lines;
    if (latent.hasEffect) {
        const auto& labels = latents_->labels;
        const QString supports = latent.supports >= 0 && latent.supports < static_cast<int64_t>(labels.size())
            ? QString::fromStdString(labels[static_cast<size_t>(latent.supports)])
            : tr("class %1").arg(latent.supports);
        lines << tr("Ablated on its %n top image(s): the prediction's probability %1 → %2; it supports %3 (that "
                    "logit falls most: %4).",
            nullptr, static_cast<int>(latent.top.size()))
                     .arg(latent.probabilityBefore, 0, 'g', 3)
                     .arg(latent.probabilityAfter, 0, 'g', 3)
                     .arg(supports)
                     .arg(latent.logitChange[static_cast<size_t>(latent.supports)], 0, 'g', 3);
    } else {
        lines << tr("Its effect was not measured (the 64 most frequent latents' are).");
    }
    lines << tr("Mean activation where it fires: %1.").arg(latent.meanActive, 0, 'g', 4);
    const QString concepts = conceptLabels_
        ? conceptLabels_(QString::fromStdString(latents_->layer), latent.index, QString::fromStdString(latents_->sae))
        : QString();
    if (!concepts.isEmpty())
        lines << tr("Concepts (the Concepts tab's dissection of this SAE's latents):") << concepts;
    pageCaption_->setText(lines.join('\n'));
    splice_->setEnabled(!document_->modelPath().isEmpty());
    visualize_->setEnabled(!document_->modelPath().isEmpty());
    direction_->clear();
}

void FeaturesPanel::visualizeDirection()
{
    if (!latents_ || latent_ < 0)
        return;
    VisualizeRequest request;
    request.model = document_->modelPath().toStdString();
    request.device = document_->device().toStdString();
    request.preprocessing = document_->setup().preprocessing;
    request.config.layer = latents_->layer;
    request.config.steps = 256;
    Objective objective;
    objective.kind = ObjectiveKind::Direction;
    try {
        objective.direction = saeDecoderDirection(latents_->sae, latent_);
    } catch (const std::exception& e) {
        column_->summary()->setText(QString::fromStdString(e.what()));
        return;
    }
    request.config.objectives = {objective};
    direction_->setText(tr("optimising…"));
    const int64_t latent = latent_;
    JobHandle* job = controller_->start<VisualizeAnalysis>(request, this);
    connect(job, &JobHandle::succeeded, this, [this, job, latent] {
        const auto result = job->result<ChannelVisualization>();
        column_->finish(result->cancelled);
        column_->summary()->setText(tr("Latent %1's decoder direction: %2 after %3 steps%4")
                                        .arg(latent)
                                        .arg(result->value, 0, 'g', 4)
                                        .arg(result->steps)
                                        .arg(result->cancelled ? tr(" (cancelled)") : QString()));
        if (latent != latent_ || result->image.shape.size() != 3)
            return; // another latent is shown now
        const FloatTensor& image = result->image;
        QImage picture(static_cast<int>(image.shape[1]), static_cast<int>(image.shape[0]), QImage::Format_RGB888);
        for (int y = 0; y < picture.height(); ++y) {
            uchar* row = picture.scanLine(y);
            for (int x = 0; x < picture.width() * 3; ++x)
                row[x] = static_cast<uchar>(std::clamp(
                    std::lround(255.0f * image.values[static_cast<size_t>(y) * picture.width() * 3 + x]), 0L, 255L));
        }
        direction_->setPixmap(QPixmap::fromImage(
            picture.scaled(LatentImageSize - 16, LatentImageSize - 16, Qt::KeepAspectRatio, Qt::SmoothTransformation)));
        Q_EMIT directionShown();
    });
    connect(job, &JobHandle::failed, this, [this] { direction_->setText(tr("failed: see the log")); });
    column_->follow(job, tr("Visualising latent %1's decoder direction…").arg(latent_));
}

void FeaturesPanel::spliceLatent()
{
    if (!latents_ || latent_ < 0)
        return;
    EditSpec edit;
    edit.path = latents_->layer;
    edit.kind = EditKind::SaeLatents;
    edit.sae = latents_->sae;
    edit.latentOp = editOp_->currentData().toString().toStdString();
    edit.channels = {latent_};
    edit.factor = edit.latentOp == "ablate" ? 0.0 : editValue_->value();
    document_->addEdit(edit);
    unsplice_->setEnabled(true);
    column_->summary()->setText(tr("Spliced into the run: %1. The window's images run again with it; Remove "
                                   "takes the SAE's edits at %2 away.")
                                    .arg(QString::fromStdString(edit.toString()), QString::fromStdString(edit.path)));
}

} // namespace torchscope
