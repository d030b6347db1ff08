#include "panels/probes_panel.h"

#include "dialogs/save_dialog.h"
#include "document/capture_keys.h"
#include "document/document.h"
#include "jobs/job_handle.h"
#include "jobs/run_controller.h"
#include "panels/job_setup_column.h"
#include "panels/setup_and_results.h"
#include "views/empty_plot.h"
#include "views/plot_file.h"
#include "views/plot_legend.h"
#include "views/qcustomplot_include.h"

#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTableWidget>
#include <QVBoxLayout>

namespace torchscope {
namespace {

QCustomPlot* makePlot(int minimumHeight)
{
    auto* plot = new QCustomPlot;
    plot->setMinimumHeight(minimumHeight);
    plot->setNoAntialiasingOnDrag(true);
    return plot;
}

QString percent(double accuracy)
{
    return QString("%1%").arg(100.0 * accuracy, 0, 'f', 1);
}

} // namespace

ProbesPanel::ProbesPanel(Document* document, RunController* controller, QWidget* parent)
    : QWidget(parent)
    , document_(document)
    , controller_(controller)
    , column_(new JobSetupColumn)
    , folder_(new QLineEdit)
    , pooling_(new QComboBox)
    , seed_(new QSpinBox)
    , trainButton_(new QPushButton(tr("Train on Selected Layer")))
    , sweepButton_(new QPushButton(tr("Sweep Ticked Layers")))
    , sweepPlot_(makePlot(120))
    , layerChoice_(new QComboBox)
    , lossPlot_(makePlot(90))
    , confusion_(new QTableWidget)
    , scores_(new QTableWidget)
{
    buildSetupColumn();
    layOutSetupAndResults(this, column_, buildResultsColumn());
    connectJobs();
    connect(document_, &Document::modelChanged, this, &ProbesPanel::resetForModel);
    column_->watchInputs(document_, SetupInput); // the folder and the seed are the tab's own
    resetForModel();
}

void ProbesPanel::buildSetupColumn()
{
    folder_->setPlaceholderText(tr("labelled images: DIR/class_a/*.png, DIR/class_b/*.png …"));
    pooling_->addItem(tr("global average pool"), "avg");
    pooling_->addItem(tr("flatten"), "flatten");
    seed_->setRange(0, 1000000);
    seed_->setToolTip(tr("Seed of the train/validation split and the initial weights"));
    column_->addFolderRow(tr("Data:"), folder_, tr("Labelled Image Folder"));
    column_->form()->addRow(tr("Features:"), pooling_);
    column_->form()->addRow(tr("Seed:"), seed_);
    column_->addStartButton(trainButton_);
    column_->addStartButton(sweepButton_);

    auto* exportModule = new QPushButton(tr("Export Probe…"));
    exportModule->setToolTip(tr("TorchScript .pt: torch.jit.load(file)(activations) in Python"));
    auto* exportState = new QPushButton(tr("Export State Dict…"));
    exportState->setToolTip(tr("weight, bias, feature_mean, feature_std for torch.load"));
    auto* import = new QPushButton(tr("Import Probe…"));
    import->setToolTip(tr("Score the window's images with a probe file"));
    auto* files = new QHBoxLayout;
    files->addWidget(exportModule);
    files->addWidget(exportState);
    files->addWidget(import);
    connect(exportModule, &QPushButton::clicked, this, [this] { exportProbe(false); });
    connect(exportState, &QPushButton::clicked, this, [this] { exportProbe(true); });
    connect(import, &QPushButton::clicked, this, &ProbesPanel::importProbe);
    auto* note = new QLabel(tr("Probes are trained on activations of the model as loaded: the module tree's "
                               "edits and truncation point do not apply to them."));
    note->setWordWrap(true);
    note->setEnabled(false);
    scores_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    scores_->hide();
    column_->addBelow(files);
    column_->addBelow(note);
    scores_->setMinimumHeight(160);
    column_->addBelow(scores_);
}

QWidget* ProbesPanel::buildResultsColumn()
{
    sweepPlot_->yAxis->setLabel(tr("validation accuracy"));
    lossPlot_->xAxis->setLabel(tr("epoch"));
    lossPlot_->yAxis->setLabel(tr("loss"));
    for (QCustomPlot* plot : {sweepPlot_, lossPlot_}) {
        placeLegendBelow(plot);
        plot->legend->setWrap(2); // two entries a line: a narrow tab shows every entry whole
        plot->legend->setVisible(false); // until there is something in it
        plot->yAxis->ticker()->setTickCount(4); // readable in a short plot
    }
    confusion_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    auto* confusionTitle = new QLabel(tr("Confusion on the validation images: <b>rows: true class</b>, "
                                         "<b>columns: predicted class</b>"));
    confusionTitle->setWordWrap(true);
    auto* resultsColumn = new QWidget;
    auto* resultsLayout = new QVBoxLayout(resultsColumn);
    resultsLayout->addWidget(sweepPlot_, 3);
    resultsLayout->addWidget(layerChoice_);
    resultsLayout->addWidget(lossPlot_, 2);
    resultsLayout->addWidget(confusionTitle);
    resultsLayout->addWidget(confusion_, 2);
    connect(layerChoice_, &QComboBox::currentIndexChanged, this, &ProbesPanel::showLayer);
    return resultsColumn;
}

void ProbesPanel::connectJobs()
{
    connect(trainButton_, &QPushButton::clicked, this, [this] {
        const QString layer = selectedLayer();
        if (layer.isEmpty()) {
            Q_EMIT failed(tr("Error Training Probe"), tr("Select a grabbed layer's output in the activation view."));
            return;
        }
        train({layer});
    });
    connect(sweepButton_, &QPushButton::clicked, this, [this] {
        const QStringList layers = tickedLayers();
        if (layers.isEmpty()) {
            Q_EMIT failed(tr("Error Training Probe"), tr("Tick the layers to sweep in the module tree."));
            return;
        }
        train(layers);
    });
}

// Probes belong to the weights they were trained on: a new model starts with empty plots (no axes
// of the last model's layers) and no scores; the data folder and seed stay.
void ProbesPanel::resetForModel()
{
    column_->cancelJob(); // a training of the model before: its probes are not this model's
    result_.reset();
    sweepPlot_->xAxis->setTickLabelRotation(0);
    showEmptyPlot(sweepPlot_, tr("Sweep Layers: each layer's validation accuracy appears here"));
    showEmptyPlot(lossPlot_, tr("Train a probe: its losses per epoch appear here"));
    const QSignalBlocker block(layerChoice_);
    layerChoice_->clear();
    confusion_->clear();
    confusion_->setRowCount(0);
    confusion_->setColumnCount(0);
    scores_->clear();
    scores_->setRowCount(0);
    scores_->hide();
    column_->reset(document_->hasModel()
            ? tr("Choose a folder with one subfolder per class.")
            : tr("Open a model first, then choose a folder with one subfolder per class."));
}

void ProbesPanel::setDataFolder(const QString& folder)
{
    folder_->setText(folder);
}

QString ProbesPanel::dataFolder() const
{
    return folder_->text();
}

QString ProbesPanel::selectedLayer() const
{
    return outputModule(document_->selectedKey());
}

QStringList ProbesPanel::tickedLayers() const
{
    QStringList layers;
    for (const auto& m : document_->model().modules) {
        const QString path = QString::fromStdString(m.path);
        if (!path.isEmpty() && document_->isGrabbed(path))
            layers << path;
    }
    return layers;
}

void ProbesPanel::train(const QStringList& layers)
{
    if (!document_->hasModel()) {
        Q_EMIT failed(tr("Error Training Probe"), tr("Open a model first."));
        return;
    }
    if (!QFileInfo(folder_->text()).isDir()) {
        Q_EMIT failed(tr("Error Training Probe"),
            tr("'%1' is not a folder. Choose one with a subfolder of images per class.").arg(folder_->text()));
        return;
    }
    ProbeRequest request;
    request.folder = folder_->text().toStdString();
    for (const auto& layer : layers)
        request.layers.push_back(layer.toStdString());
    request.pooling = pooling_->currentData().toString().toStdString();
    request.seed = seed_->value();
    request.setup = document_->setup();
    if (!cache_) {
        const QString folder = QStandardPaths::writableLocation(QStandardPaths::CacheLocation);
        cache_ = makeActivationCache(
            folder.isEmpty() ? std::string() : QDir(folder).filePath("activations").toStdString());
    }
    request.cache = cache_;
    JobHandle* job = controller_->start<ProbeAnalysis>(request, this);
    connect(job, &JobHandle::progress, this, [this](qint64, qint64, const QString& stage) {
        column_->progressBar()->setFormat(
            stage == "training" ? tr("training layer %v of %m") : tr("activations: %v / %m images"));
    });
    connect(job, &JobHandle::succeeded, this, [this, job] {
        const ProbeResultPtr snapshot = job->result<ProbeResult>();
        column_->finish(snapshot->cancelled);
        showResult(snapshot);
        Q_EMIT finished(snapshot);
    });
    column_->follow(job, tr("Grabbing activations of %n layer(s)…", nullptr, static_cast<int>(layers.size())));
}

void ProbesPanel::showResult(const ProbeResultPtr& snapshot)
{
    result_ = snapshot;
    if (snapshot->layers.empty()) {
        column_->summary()->setText(
            snapshot->cancelled ? tr("Cancelled before a probe was trained.") : tr("No probe trained."));
        return;
    }
    QStringList classes;
    for (const auto& c : snapshot->classNames)
        classes << QString::fromStdString(c);
    const auto& best = snapshot->layers[static_cast<size_t>(snapshot->best)];
    QString text = tr("%1 images, classes: %2. Best: <b>%3</b>, validation accuracy %4 (chance %5).")
                       .arg(snapshot->samples)
                       .arg(classes.join(", "), QString::fromStdString(best.layer), percent(best.validationAccuracy),
                           percent(1.0 / std::max<qsizetype>(1, classes.size())));
    if (!snapshot->cachedLayers.empty())
        text += tr(" %n layer(s) from the activation cache.", nullptr, static_cast<int>(snapshot->cachedLayers.size()));
    if (snapshot->cancelled)
        text += tr(" Cancelled: the layers finished so far are kept.");
    if (!snapshot->failures.empty())
        text += tr(" %n image(s) could not be read.", nullptr, static_cast<int>(snapshot->failures.size()));
    column_->summary()->setText(text);

    // Validation accuracy by layer: bars, the best one highlighted.
    prepareFilledPlot(sweepPlot_);
    sweepPlot_->clearPlottables();
    auto* bars = new QCPBars(sweepPlot_->xAxis, sweepPlot_->yAxis);
    auto* bestBar = new QCPBars(sweepPlot_->xAxis, sweepPlot_->yAxis);
    bars->setName(tr("layer")); // the axis says what the bars are
    bars->setBrush(QColor(70, 130, 180));
    bestBar->setBrush(QColor(230, 140, 30));
    bestBar->setName(tr("best layer"));
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    QMap<QString, double> accuracies;
    for (size_t i = 0; i < snapshot->layers.size(); ++i) {
        const auto& l = snapshot->layers[i];
        ticker->addTick(static_cast<double>(i), QString::fromStdString(l.layer));
        (static_cast<int>(i) == snapshot->best ? bestBar : bars)->addData(static_cast<double>(i), l.validationAccuracy);
        accuracies[QString::fromStdString(l.layer)] = l.validationAccuracy;
    }
    // Chance (one over the number of classes) as a dashed line; the axis starts a little below it.
    const double chance = 1.0 / std::max<qsizetype>(1, classes.size());
    auto* chanceLine = new QCPGraph(sweepPlot_->xAxis, sweepPlot_->yAxis);
    chanceLine->setName(tr("chance"));
    chanceLine->setPen(QPen(Qt::gray, 1.5, Qt::DashLine));
    chanceLine->setData({-0.6, static_cast<double>(snapshot->layers.size()) - 0.4}, {chance, chance});
    sweepPlot_->xAxis->setTicker(ticker);
    sweepPlot_->xAxis->setTickLabelRotation(snapshot->layers.size() > 4 ? -45 : 0); // ends at the tick: none cut off
    sweepPlot_->xAxis->setRange(-0.6, static_cast<double>(snapshot->layers.size()) - 0.4);
    sweepPlot_->yAxis->setRange(std::max(0.0, chance - 0.1), 1.02);
    sweepPlot_->legend->setVisible(true);
    sweepPlot_->replot(QCustomPlot::rpQueuedReplot);
    document_->setProbeResults(
        accuracies, snapshot->layers.size() > 1 ? QString::fromStdString(best.layer) : document_->bestProbeLayer());

    const QSignalBlocker block(layerChoice_);
    layerChoice_->clear();
    for (const auto& l : snapshot->layers)
        layerChoice_->addItem(
            QString("%1 — train %2, validation %3")
                .arg(QString::fromStdString(l.layer), percent(l.trainAccuracy), percent(l.validationAccuracy)),
            QString::fromStdString(l.layer));
    layerChoice_->setCurrentIndex(snapshot->best);
    showLayer(snapshot->best);
}

void ProbesPanel::showLayer(int index)
{
    if (!result_ || index < 0 || index >= static_cast<int>(result_->layers.size()))
        return;
    const auto& l = result_->layers[static_cast<size_t>(index)];
    prepareFilledPlot(lossPlot_);
    // A short plot (its legend below it): three loss ticks, not six labels 10 px apart.
    lossPlot_->yAxis->ticker()->setTickCount(3);
    lossPlot_->clearGraphs();
    const QStringList curveNames{tr("train loss"), tr("validation loss")};
    const std::vector<const std::vector<double>*> curves{&l.trainLoss, &l.validationLoss};
    const QColor colors[] = {QColor(70, 130, 180), QColor(230, 140, 30)};
    for (int c = 0; c < 2; ++c) {
        auto* graph = lossPlot_->addGraph();
        graph->setName(curveNames[c]);
        graph->setPen(QPen(colors[c], 2));
        for (size_t e = 0; e < curves[static_cast<size_t>(c)]->size(); ++e)
            graph->addData(static_cast<double>(e + 1), (*curves[static_cast<size_t>(c)])[e]);
    }
    lossPlot_->legend->setVisible(true);
    lossPlot_->rescaleAxes();
    lossPlot_->replot(QCustomPlot::rpQueuedReplot);

    const int k = static_cast<int>(l.confusion.size());
    confusion_->setRowCount(k);
    confusion_->setColumnCount(k);
    QStringList classNames;
    for (const auto& c : result_->classNames)
        classNames << QString::fromStdString(c);
    QStringList trueNames, predictedNames;
    for (const auto& name : classNames) {
        trueNames << tr("true: %1").arg(name);
        predictedNames << tr("pred.: %1").arg(name);
    }
    confusion_->setVerticalHeaderLabels(trueNames);
    confusion_->setHorizontalHeaderLabels(predictedNames);
    confusion_->setToolTip(tr("Validation images: rows are the true class, columns the predicted one"));
    for (int r = 0; r < k; ++r)
        for (int c = 0; c < k; ++c) {
            auto* item
                = new QTableWidgetItem(QString::number(l.confusion[static_cast<size_t>(r)][static_cast<size_t>(c)]));
            item->setTextAlignment(Qt::AlignCenter);
            item->setToolTip(tr("true %1, predicted %2").arg(classNames.value(r), classNames.value(c)));
            if (r == c)
                item->setBackground(QColor(200, 230, 200));
            else if (l.confusion[static_cast<size_t>(r)][static_cast<size_t>(c)] > 0)
                item->setBackground(QColor(245, 210, 200));
            confusion_->setItem(r, c, item);
        }
}

void ProbesPanel::exportProbe(bool stateDict)
{
    const QString layer = layerChoice_->currentData().toString();
    if (layer.isEmpty()) {
        Q_EMIT failed(tr("Error Exporting Probe"), tr("Train a probe first."));
        return;
    }
    const QString path = askSavePath(this, stateDict ? tr("Export Probe State Dict") : tr("Export Probe"),
        QString("probe_%1%2.pt").arg(layer, stateDict ? "_state" : ""), tr("PyTorch files (*.pt)"));
    if (path.isEmpty())
        return;
    exportProbeTo(layer, path, stateDict);
}

void ProbesPanel::exportProbeTo(const QString& layer, const QString& path, bool stateDict)
{
    if (!result_) {
        Q_EMIT failed(tr("Error Exporting Probe"), tr("Train a probe first."));
        return;
    }
    JobHandle* job = controller_->startTask(
        tr("Error Exporting Probe"), JobLane::Batch,
        [result = result_, layer = layer.toStdString(), file = path.toStdString(), stateDict](
            ModelSource&) { saveTrainedProbe(*result, layer, file, stateDict); },
        this);
    connect(
        job, &JobHandle::succeeded, this, [this, path] { Q_EMIT message(tr("Exported the probe to %1").arg(path)); });
}

void ProbesPanel::importProbe()
{
    const QString path
        = QFileDialog::getOpenFileName(this, tr("Import Probe"), QString(), tr("Probes (*.pt);;All files (*)"));
    if (path.isEmpty())
        return;
    if (document_->images().isEmpty()) {
        Q_EMIT failed(tr("Error Importing Probe"), tr("Drop images on the window first: the probe scores them."));
        return;
    }
    applyProbeFile(path, document_->images());
}

void ProbesPanel::applyProbeFile(const QString& path, const QStringList& images)
{
    ProbeScoresRequest request;
    request.file = path.toStdString();
    for (const auto& image : images)
        request.images.push_back(image.toStdString());
    request.setup = document_->setup();
    JobHandle* job = controller_->start<ProbeScoresAnalysis>(request, this);
    connect(job, &JobHandle::succeeded, this, [this, job] {
        const ProbeScoresPtr scores = job->result<ProbeScores>();
        showScores(scores);
        Q_EMIT scoresShown(scores);
    });
}

void ProbesPanel::showScores(const ProbeScoresPtr& scores)
{
    QStringList classes;
    for (const auto& c : scores->classNames)
        classes << QString::fromStdString(c);
    const int columns = scores->probabilities.empty() ? 0 : static_cast<int>(scores->probabilities.front().size());
    while (classes.size() < columns)
        classes << tr("class %1").arg(classes.size());
    scores_->setColumnCount(columns + 1);
    scores_->setHorizontalHeaderLabels(QStringList{tr("image")} + classes);
    scores_->setRowCount(static_cast<int>(scores->images.size()));
    for (size_t i = 0; i < scores->images.size(); ++i) {
        scores_->setItem(static_cast<int>(i), 0,
            new QTableWidgetItem(QFileInfo(QString::fromStdString(scores->images[i])).fileName()));
        for (int c = 0; c < columns; ++c)
            scores_->setItem(static_cast<int>(i), c + 1,
                new QTableWidgetItem(percent(scores->probabilities[i][static_cast<size_t>(c)])));
    }
    scores_->show();
    Q_EMIT message(
        tr("Probe %1 (on %2) scored %n image(s)", nullptr, static_cast<int>(scores->images.size()))
            .arg(QFileInfo(QString::fromStdString(scores->file)).fileName(), QString::fromStdString(scores->layer)));
}

QString ProbesPanel::saveSweepPlot(const QString& path) const
{
    return savePlotFile(sweepPlot_, path, 900, 420);
}

} // namespace torchscope
