#include "probes_panel.h"

#include "capture_keys.h"
#include "document.h"
#include "plot_file.h"
#include "qcustomplot_include.h"
#include "run_controller.h"
#include "save_dialog.h"
#include "setup_and_results.h"

#include <QComboBox>
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
    , folder_(new QLineEdit)
    , pooling_(new QComboBox)
    , seed_(new QSpinBox)
    , trainButton_(new QPushButton(tr("Train on Selected Layer")))
    , sweepButton_(new QPushButton(tr("Sweep Ticked Layers")))
    , cancelButton_(new QPushButton(tr("Cancel")))
    , progress_(new QProgressBar)
    , summary_(new QLabel(tr("Choose a folder with one subfolder per class.")))
    , sweepPlot_(makePlot(120))
    , layerChoice_(new QComboBox)
    , lossPlot_(makePlot(90))
    , confusion_(new QTableWidget)
    , scores_(new QTableWidget)
{
    folder_->setPlaceholderText(tr("labelled images: DIR/class_a/*.png, DIR/class_b/*.png …"));
    auto* browse = new QPushButton(tr("Browse…"));
    connect(browse, &QPushButton::clicked, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Labelled Image Folder"), folder_->text());
        if (!dir.isEmpty())
            setDataFolder(dir);
    });
    pooling_->addItem(tr("global average pool"), "avg");
    pooling_->addItem(tr("flatten"), "flatten");
    seed_->setRange(0, 1000000);
    seed_->setToolTip(tr("Seed of the train/validation split and the initial weights"));
    summary_->setWordWrap(true);
    progress_->hide();
    cancelButton_->hide();

    auto* folderRow = new QHBoxLayout;
    folderRow->addWidget(folder_, 1);
    folderRow->addWidget(browse);
    auto* form = new QFormLayout;
    form->addRow(tr("Data:"), folderRow);
    form->addRow(tr("Features:"), pooling_);
    form->addRow(tr("Seed:"), seed_);
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(trainButton_);
    buttons->addWidget(sweepButton_);
    auto* running = new QHBoxLayout;
    running->addWidget(progress_, 1);
    running->addWidget(cancelButton_);

    sweepPlot_->yAxis->setRange(0, 1.05);
    sweepPlot_->yAxis->setLabel(tr("validation accuracy"));
    lossPlot_->xAxis->setLabel(tr("epoch"));
    lossPlot_->yAxis->setLabel(tr("loss"));
    for (QCustomPlot* plot : {sweepPlot_, lossPlot_}) {
        // The legend in a row of its own under the plot: it never covers a bar or a curve.
        auto* legendRow = new QCPLayoutGrid;
        plot->axisRect()->insetLayout()->take(plot->legend);
        plot->plotLayout()->addElement(1, 0, legendRow);
        legendRow->setMargins(QMargins(5, 0, 5, 5));
        legendRow->addElement(0, 0, plot->legend);
        plot->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
        plot->legend->setBorderPen(Qt::NoPen);
        plot->plotLayout()->setRowStretchFactor(1, 0.001);
        plot->legend->setVisible(false); // until there is something in it
        plot->yAxis->ticker()->setTickCount(4); // readable in a short plot
    }
    confusion_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    scores_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    scores_->hide();

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
    auto* note = new QLabel(tr("Probes are trained on activations of the model as loaded: the module tree's "
                               "edits and truncation point do not apply to them."));
    note->setWordWrap(true);
    note->setEnabled(false);

    auto* setupColumn = new QWidget;
    auto* setupLayout = new QVBoxLayout(setupColumn);
    setupLayout->addLayout(form);
    setupLayout->addLayout(buttons);
    setupLayout->addLayout(running);
    setupLayout->addWidget(summary_);
    setupLayout->addLayout(files);
    setupLayout->addWidget(note);
    setupLayout->addWidget(scores_, 1);

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
    layOutSetupAndResults(this, setupColumn, resultsColumn);

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
    connect(cancelButton_, &QPushButton::clicked, this, [this] { controller_->cancelProbes(); });
    connect(layerChoice_, &QComboBox::currentIndexChanged, this, &ProbesPanel::showLayer);
    connect(exportModule, &QPushButton::clicked, this, [this] { exportProbe(false); });
    connect(exportState, &QPushButton::clicked, this, [this] { exportProbe(true); });
    connect(import, &QPushButton::clicked, this, &ProbesPanel::importProbe);

    connect(document_, &Document::modelChanged, this, [this] {
        // Probes belong to the weights they were trained on.
        result_.reset();
        summary_->clear();
        for (QCustomPlot* plot : {sweepPlot_, lossPlot_}) {
            plot->clearPlottables();
            plot->legend->setVisible(false);
            plot->replot();
        }
        const QSignalBlocker block(layerChoice_);
        layerChoice_->clear();
        confusion_->clear();
        confusion_->setRowCount(0);
        confusion_->setColumnCount(0);
        scores_->clear();
        scores_->setRowCount(0);
        progress_->setValue(0);
    });

    connect(controller_, &RunController::probeProgress, this, [this](qint64 done, qint64 total, const QString& stage) {
        progress_->setRange(0, static_cast<int>(total));
        progress_->setValue(static_cast<int>(done));
        progress_->setFormat(stage == "training" ? tr("training layer %v of %m") : tr("activations: %v / %m images"));
    });
    connect(controller_, &RunController::probesFinished, this, [this](const ProbeSnapshotPtr& snapshot) {
        setRunning(false);
        showResult(snapshot);
        Q_EMIT finished(snapshot);
    });
    connect(controller_, &RunController::probeScores, this, &ProbesPanel::showScores);
    connect(controller_, &RunController::probeExported, this,
        [this](const QString& path) { Q_EMIT message(tr("Exported the probe to %1").arg(path)); });
    connect(controller_, &RunController::failed, this, [this](WorkerTask task) {
        if (task == WorkerTask::Probes)
            setRunning(false);
    });
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
    setRunning(true);
    summary_->setText(tr("Grabbing activations of %n layer(s)…", nullptr, static_cast<int>(layers.size())));
    controller_->trainProbes(request);
}

void ProbesPanel::setRunning(bool running)
{
    progress_->setVisible(running);
    cancelButton_->setVisible(running);
    trainButton_->setEnabled(!running);
    sweepButton_->setEnabled(!running);
}

void ProbesPanel::showResult(const ProbeSnapshotPtr& snapshot)
{
    result_ = snapshot;
    if (snapshot->layers.empty()) {
        summary_->setText(snapshot->cancelled ? tr("Cancelled before a probe was trained.") : tr("No probe trained."));
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
    summary_->setText(text);

    // Validation accuracy by layer: bars, the best one highlighted.
    sweepPlot_->clearPlottables();
    auto* bars = new QCPBars(sweepPlot_->xAxis, sweepPlot_->yAxis);
    auto* bestBar = new QCPBars(sweepPlot_->xAxis, sweepPlot_->yAxis);
    bars->setName(tr("validation accuracy"));
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
    controller_->exportProbe(layer, path, stateDict);
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
    controller_->applyProbeFile(path, document_->images(), document_->setup());
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
