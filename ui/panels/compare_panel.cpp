#include "panels/compare_panel.h"

#include "compare/compare_files.h"
#include "dialogs/layer_pair_dialog.h"
#include "dialogs/save_dialog.h"
#include "document/document.h"
#include "export/manifest.h"
#include "imaging/image_decoder.h"
#include "jobs/job_handle.h"
#include "jobs/run_controller.h"
#include "panels/job_setup_column.h"
#include "panels/setup_and_results.h"
#include "views/compare_plots.h"
#include "views/plot_file.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QVBoxLayout>

namespace torchscope {
namespace {

enum ModeIndex { CkaIndex, CheckpointsIndex, PrecisionIndex };

std::vector<std::string> specsOf(const QString& text)
{
    std::vector<std::string> specs;
    for (const QString& spec : text.split(QRegularExpression("[\\s,]+"), Qt::SkipEmptyParts))
        specs.push_back(spec.toStdString());
    return specs;
}

} // namespace

ComparePanel::ComparePanel(Document* document, RunController* controller, QWidget* parent)
    : QWidget(parent)
    , document_(document)
    , controller_(controller)
    , column_(new JobSetupColumn)
    , mode_(new QComboBox)
    , modelA_(new QLabel)
    , modelB_(new QLineEdit)
    , browseB_(new QPushButton(tr("Browse…")))
    , layers_(new QLineEdit)
    , layersB_(new QLineEdit)
    , features_(new QComboBox)
    , threshold_(new QDoubleSpinBox)
    , folder_(new QLineEdit)
    , batch_(new QSpinBox)
    , start_(new QPushButton(tr("Compare")))
    , heatMap_(new CkaHeatMap)
    , drift_(new DriftPlot)
{
    buildForm();
    column_->addStartButton(start_);
    buildExportMenu();
    auto* plots = new QSplitter(Qt::Vertical);
    plots->addWidget(heatMap_);
    plots->addWidget(drift_);
    layOutSetupAndResults(this, column_, plots);
    connectJobs();
    connect(document_, &Document::modelChanged, this, &ComparePanel::resetForModel);
    column_->watchInputs(document_, SetupInput); // model B, the layers and the folder are the tab's own
    resetForModel();
    updateMode();
}

void ComparePanel::buildForm()
{
    mode_->addItem(tr("Two models (CKA)"));
    mode_->addItem(tr("Two checkpoints"));
    mode_->addItem(tr("Precision / device"));
    mode_->setItemData(
        CkaIndex, tr("Linear CKA for every pair of A's and B's layers (any two architectures)"), Qt::ToolTipRole);
    mode_->setItemData(CheckpointsIndex,
        tr("Two checkpoints of one architecture on the same inputs: CKA, cosine and relative L2 per layer"),
        Qt::ToolTipRole);
    mode_->setItemData(PrecisionIndex,
        tr("The model in lower precisions and on other devices against float64 on the CPU"), Qt::ToolTipRole);
    modelA_->setWordWrap(true);
    modelB_->setPlaceholderText(tr("the second model (.pt); empty: the model against itself"));
    layers_->setPlaceholderText(tr("the ticked layers, or specs: features.* layer3 type:Conv2d"));
    layersB_->setPlaceholderText(tr("model B's layers; empty: the same specs"));
    features_->addItem(tr("every value (C·H·W)"));
    features_->addItem(tr("channel means (C)"));
    features_->setToolTip(tr("What a sample's features are: all its values, as Kornblith et al. (2019), or each "
                             "channel's spatial mean"));
    threshold_->setDecimals(6);
    threshold_->setRange(0.0, 1e6);
    threshold_->setToolTip(tr("Checkpoints: the first layer whose CKA falls below it. Precision: the first layer "
                              "whose relative L2 error rises above it."));
    folder_->setPlaceholderText(tr("a folder of images (subfolders are read too)"));
    batch_->setRange(4, 1024);
    batch_->setValue(16);
    batch_->setToolTip(tr("Images per forward pass; the minibatch CKA averages one estimate per batch (4 or more)"));

    const bool cuda = RunController::availableDevices().contains("cuda");
    auto* precisionBox = new QWidget;
    auto* precisionRow = new QVBoxLayout(precisionBox);
    precisionRow->setContentsMargins(0, 0, 0, 0);
    for (const auto& p : defaultPrecisions(true)) {
        auto* box = new QCheckBox(QString::fromStdString(p.name()));
        box->setProperty("precision", QString::fromStdString(p.device == "cpu" ? p.dtype : p.device + ":" + p.dtype));
        box->setChecked(p.device == "cpu" || cuda);
        box->setEnabled(p.device == "cpu" || cuda);
        if (!box->isEnabled())
            box->setToolTip(tr("No CUDA device: LibTorch sees no GPU here"));
        precisions_ << box;
        precisionRow->addWidget(box);
    }
    connect(browseB_, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Model B"), QFileInfo(document_->modelPath()).path(),
            tr("Models (*.pt *.pth *.ptl *.zip *.pt2);;All files (*)"));
        if (!path.isEmpty())
            modelB_->setText(path);
    });
    connect(mode_, &QComboBox::currentIndexChanged, this, &ComparePanel::updateMode);

    modelBRow_ = new QHBoxLayout;
    modelBRow_->addWidget(modelB_, 1);
    modelBRow_->addWidget(browseB_);
    QFormLayout* form = column_->form();
    form->addRow(tr("Compare:"), mode_);
    form->addRow(tr("Model A:"), modelA_);
    form->addRow(tr("Model B:"), modelBRow_);
    form->addRow(tr("Layers:"), layers_);
    form->addRow(tr("Layers of B:"), layersB_);
    form->addRow(tr("Precisions:"), precisionBox);
    form->addRow(tr("CKA features:"), features_);
    form->addRow(tr("Threshold:"), threshold_);
    column_->addFolderRow(tr("Images:"), folder_, tr("Images to Compare On"));
    form->addRow(tr("Batch:"), batch_);
}

void ComparePanel::buildExportMenu()
{
    const QString pictures = tr("PNG image (*.png);;PDF (*.pdf)");
    column_->addExportMenu(
        {
            {tr("Heat Map as PNG or PDF…"), tr("Export Heat Map"), "cka.png", pictures, "heat map"},
            {tr("Drift Plot as PNG or PDF…"), tr("Export Drift Plot"), "drift.png", pictures, "drift"},
            {tr("Numbers as CSV, JSON or .pt…"), tr("Export Comparison"), "comparison.csv",
                tr("CSV (*.csv);;JSON (*.json);;PyTorch (*.pt)"), QString()},
        },
        [this](const QString& path, const QString& plot) { return exportTo(path, plot); });
    connect(column_, &JobSetupColumn::exportFailed, this, &ComparePanel::failed);
}

void ComparePanel::connectJobs()
{
    connect(start_, &QPushButton::clicked, this, &ComparePanel::start);
    connect(heatMap_, &CkaHeatMap::pairPicked, this, &ComparePanel::showPair);
}

// A new model is a new model A: the last model's comparison, its plots and its layer maps go (a
// running comparison is cancelled), and so do the layer specs typed for the last model (its paths
// or globs name another model's modules); the folder, model B and the settings stay. The same model
// opened again (on another device) keeps its specs.
void ComparePanel::resetForModel()
{
    if (document_->modelPath() != modelPath_) {
        layers_->clear();
        layersB_->clear();
        modelPath_ = document_->modelPath();
    }
    column_->cancelJob();
    if (mapsJob_)
        mapsJob_->abandon();
    mapsJob_ = nullptr;
    result_.reset();
    heatMap_->clear();
    drift_->clear();
    if (auto* dialog = findChild<LayerPairDialog*>())
        dialog->close();
    modelA_->setText(document_->hasModel() ? document_->modelPath() : tr("open a model first"));
    modelA_->setToolTip(modelA_->text());
    column_->reset(document_->hasModel() ? tr("Choose layers and a folder of images, then Compare.")
                                         : tr("Open a model first: it is model A."));
}

ComparePanel::~ComparePanel() = default;

void ComparePanel::updateMode()
{
    const int mode = mode_->currentIndex();
    // Only the rows the mode uses.
    column_->form()->setRowVisible(modelBRow_, mode != PrecisionIndex);
    column_->form()->setRowVisible(layersB_, mode == CkaIndex);
    column_->form()->setRowVisible(features_, mode != PrecisionIndex);
    column_->form()->setRowVisible(precisions_.front()->parentWidget(), mode == PrecisionIndex);
    modelB_->setPlaceholderText(mode == CheckpointsIndex
            ? tr("the second checkpoint (.pt), same architecture")
            : tr("the second model (.pt); empty: the model against itself"));
    threshold_->setValue(mode == PrecisionIndex ? 1e-3 : 0.99);
    heatMap_->setVisible(mode != PrecisionIndex);
    drift_->setVisible(mode != CkaIndex); // CKA of two models has no per-layer drift
}

void ComparePanel::setUp(const QString& mode, const QString& modelB, const QString& layers, const QString& folder)
{
    mode_->setCurrentIndex(mode == "precision" ? PrecisionIndex : mode == "checkpoints" ? CheckpointsIndex : CkaIndex);
    modelB_->setText(modelB);
    layers_->setText(layers);
    folder_->setText(folder);
}

CompareRequest ComparePanel::request(QString* error) const
{
    CompareRequest r;
    *error = {};
    if (!document_->hasModel()) {
        *error = tr("Open a model first: it is model A.");
        return r;
    }
    r.modelA = document_->modelPath().toStdString();
    r.modelB = modelB_->text().trimmed().isEmpty() ? r.modelA : modelB_->text().trimmed().toStdString();
    r.config.mode = mode_->currentIndex() == PrecisionIndex ? CompareMode::Precision
        : mode_->currentIndex() == CheckpointsIndex         ? CompareMode::Checkpoints
                                                            : CompareMode::Cka;
    QString layers = layers_->text().trimmed();
    if (layers.isEmpty()) // the ticked outputs
        for (const QString& grab : document_->grabs())
            if (!grab.contains(':'))
                layers += grab + " ";
    r.config.layers = specsOf(layers);
    r.config.layersB = specsOf(layersB_->text());
    r.config.features = features_->currentIndex() == 1 ? CkaFeatures::Pooled : CkaFeatures::Flattened;
    r.config.threshold = threshold_->value();
    for (auto* box : precisions_)
        if (box->isChecked() && box->isEnabled())
            r.config.precisions.push_back(Precision::parse(box->property("precision").toString().toStdString()));
    r.folder = folder_->text().trimmed().toStdString();
    r.preprocessing = document_->preprocessing();
    r.batch = batch_->value();
    r.device = document_->device().isEmpty() ? "cpu" : document_->device().toStdString();
    if (r.config.layers.empty())
        *error = tr("Choose the layers to compare: tick them in the module tree, or give specs such as features.* "
                    "or type:Conv2d.");
    else if (r.folder.empty() || !QFileInfo(QString::fromStdString(r.folder)).isDir())
        *error = tr("Choose a folder of images to compare on.");
    else if (r.config.mode == CompareMode::Checkpoints && r.modelB == r.modelA)
        *error = tr("Choose the second checkpoint (model B).");
    else if (r.config.mode != CompareMode::Precision && !QFileInfo(QString::fromStdString(r.modelB)).isFile())
        *error = tr("Model B '%1' is not a file.").arg(QString::fromStdString(r.modelB));
    else if (r.config.mode == CompareMode::Precision && r.config.precisions.empty())
        *error = tr("Tick at least one precision to compare with float64.");
    return r;
}

void ComparePanel::start()
{
    QString error;
    const CompareRequest r = request(&error);
    if (!error.isEmpty()) {
        column_->summary()->setText(error);
        Q_EMIT failed(tr("Cannot Compare"), error);
        return;
    }
    lastRequest_ = r;
    JobHandle* job = controller_->start<CompareAnalysis>(r, this);
    connect(job, &JobHandle::succeeded, this, [this, job] { showResult(job->result<CompareResult>()); });
    column_->follow(job, tr("Comparing…"));
}

void ComparePanel::cancel()
{
    if (JobHandle* job = column_->job())
        job->cancel();
}

void ComparePanel::showResult(const CompareResultPtr& result)
{
    column_->finish(result->cancelled);
    result_ = result;
    shownRequest_ = lastRequest_; // runs are one at a time: the last started made this
    column_->exportButton()->setEnabled(true);
    const bool precision = result->mode == CompareMode::Precision;
    heatMap_->setVisible(!precision);
    if (precision)
        heatMap_->clear();
    else
        heatMap_->show(*result);
    drift_->setVisible(result->mode != CompareMode::Cka);
    drift_->show(*result);

    QStringList lines;
    if (precision)
        lines << tr("%n image(s), every precision against float64 on the CPU.", nullptr, int(result->samples));
    else
        lines
            << tr("Minibatch linear CKA over %1 images in %2 batches.").arg(result->ckaSamples).arg(result->ckaBatches);
    for (const auto& c : result->comparisons) {
        if (!c.unavailable.empty())
            lines << tr("%1: not run: %2").arg(QString::fromStdString(c.name), QString::fromStdString(c.unavailable));
        else if (c.firstOver)
            lines << tr("%1: first layer %2 the threshold: <b>%3</b>")
                         .arg(precision ? QString::fromStdString(c.name) : tr("B"),
                             precision ? tr("over") : tr("below"),
                             QString::fromStdString(c.layers[*c.firstOver].layer));
        else
            lines << tr("%1: no layer %2 the threshold.")
                         .arg(precision ? QString::fromStdString(c.name) : tr("B"),
                             precision ? tr("over") : tr("below"));
    }
    if (result->cancelled)
        lines << tr("Cancelled: the numbers are those of the images compared so far.");
    for (const auto& w : result->warnings)
        lines << QString::fromStdString(w).toHtmlEscaped();
    if (!result->failures.empty())
        lines << tr("%n image(s) could not be read.", nullptr, int(result->failures.size()));
    if (!precision)
        lines << tr("Hover over the heat map for values; click a cell to see both layers for the selected image.");
    column_->summary()->setText(lines.join("<br>"));
    Q_EMIT finished(result);
}

void ComparePanel::showPair(const QString& layerA, const QString& layerB)
{
    const QStringList images = document_->images();
    const int selected = document_->selectedImage();
    if (images.isEmpty() || selected < 0 || selected >= images.size()) {
        column_->summary()->setText(
            tr("Add an image to the window (drop it on the strip) to see %1 and %2 for it.").arg(layerA, layerB));
        return;
    }
    LayerMapsRequest request{shownRequest_, images[selected].toStdString(), layerA.toStdString(), layerB.toStdString()};
    if (mapsJob_)
        mapsJob_->abandon(); // a newer cell was clicked
    mapsJob_ = controller_->start<LayerMapsAnalysis>(request, this);
    connect(mapsJob_, &JobHandle::succeeded, this, [this, job = mapsJob_.data()] {
        const auto maps = job->result<LayerPairResult>();
        auto* dialog = findChild<LayerPairDialog*>();
        if (!dialog)
            dialog = new LayerPairDialog(this);
        const bool precision = shownRequest_.config.mode == CompareMode::Precision;
        dialog->showMaps(*maps, precision ? tr("float64") : tr("A"), precision ? tr("float32") : tr("B"));
        dialog->show();
        dialog->raise();
        Q_EMIT pairShown(*maps);
    });
    // A comparison may be running: its state stays; the reason goes to the summary and the log.
    connect(mapsJob_, &JobHandle::failed, this,
        [this](const QString&, const QString& message) { column_->summary()->setText(message); });
}

QString ComparePanel::exportTo(const QString& path, const QString& plot) const
{
    if (!result_)
        return tr("Nothing to export: run a comparison first.");
    if (plot == "heat map")
        return savePlotFile(heatMap_->plot(), path, 900, 760);
    if (plot == "drift")
        return savePlotFile(drift_->plot(), path, 900, 520);
    try {
        ExportManifest manifest;
        manifest.command = "TorchScope window: Compare > Export";
        manifest.model = shownRequest_.modelA;
        if (shownRequest_.config.mode != CompareMode::Precision)
            manifest.modelB = shownRequest_.modelB;
        manifest.device = shownRequest_.device;
        manifest.preprocessing = shownRequest_.preprocessing;
        manifest.settings = {{"mode", modeName(result_->mode)}, {"folder", shownRequest_.folder}};
        for (const auto& image : listImages(shownRequest_.folder))
            manifest.images.push_back({image});
        writeComparison(path.toStdString(), *result_, &manifest);
    } catch (const std::exception& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

} // namespace torchscope
