#include "panels/recorders_panel.h"

#include "graph/request.h"

#include "dialogs/save_dialog.h"
#include "document/document.h"
#include "jobs/job_handle.h"
#include "jobs/run_controller.h"
#include "jobs/workbench_jobs.h"
#include "panels/job_setup_column.h"
#include "panels/setup_and_results.h"
#include "views/statistics_plots.h"

#include <QComboBox>
#include <QDesktopServices>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QImageReader>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QStyle>
#include <QUrl>
#include <QVBoxLayout>

namespace torchscope {
namespace {

// An edit as the CLI writes it, with a long channel list cut short: "layer3:zero:0,1,2,3,4,5,… (80
// channels)" (the whole list is in the tooltip), so a column never grows with the channels.
QString shortEdit(const std::string& edit)
{
    QStringList parts = QString::fromStdString(edit).split(':');
    constexpr int Shown = 6;
    if (parts.size() >= 3) {
        const QStringList channels = parts[2].split(',');
        if (channels.size() > Shown + 2)
            parts[2]
                = QStringList(channels.mid(0, Shown)).join(',') + QObject::tr(",… (%1 channels)").arg(channels.size());
    }
    return parts.join(':');
}

// Edits as the CLI writes them: cut short for the column (shortEdit), whole for its tooltip.
struct EditTexts {
    QStringList shown, whole;
};

EditTexts editTexts(const std::vector<std::string>& edits)
{
    EditTexts texts;
    for (const auto& edit : edits) {
        texts.shown << shortEdit(edit);
        texts.whole << QString::fromStdString(edit);
    }
    return texts;
}

} // namespace

RecordersPanel::RecordersPanel(Document* document, RunController* controller, QWidget* parent)
    : QWidget(parent)
    , document_(document)
    , controller_(controller)
    , column_(new JobSetupColumn)
    , folder_(new QLineEdit)
    , grabs_(new QLineEdit)
    , reduction_(new QComboBox)
    , condition_(new QLineEdit("all"))
    , batch_(new QSpinBox)
    , start_(new QPushButton(tr("Start")))
    , layer_(new QComboBox)
    , channel_(new QSpinBox)
    , plots_(new StatisticsPlots)
    , topImages_(new QListWidget)
    , edits_(new QLabel)
{
    buildSetupColumn();
    layOutSetupAndResults(this, column_, buildResultsColumn());
    connectJobs();
    connect(document_, &Document::modelChanged, this, &RecordersPanel::resetForModel);
    connect(document_, &Document::requestChanged, this, &RecordersPanel::showEdits);
    column_->watchInputs(document_, SetupInput | EditsInput | TargetInput);
    resetForModel();
    showEdits();
}

void RecordersPanel::buildSetupColumn()
{
    folder_->setPlaceholderText(tr("a folder of images; one subfolder per class gives true labels"));
    grabs_->setPlaceholderText(tr("the ticked layers, or specs: layer3.* type:Conv2d fc:grad"));
    reduction_->addItems({"stats", "mean", "sum", "max", "min", "none"});
    reduction_->setToolTip(tr("stats: per-channel mean, std, min, max, zeros, histogram and top images; "
                              "none keeps every sample (up to a memory cap)"));
    condition_->setToolTip(tr("all | true:L1,L2 | predicted:L1,L2 | correct | wrong"));
    batch_->setRange(1, 1024);
    batch_->setValue(16);
    column_->addFolderRow(tr("Folder:"), folder_, tr("Folder to Record"));
    QFormLayout* form = column_->form();
    form->addRow(tr("Grab:"), grabs_);
    form->addRow(tr("Reduction:"), reduction_);
    form->addRow(tr("Condition:"), condition_);
    form->addRow(tr("Batch:"), batch_);
    column_->addStartButton(start_);
    column_->addExportButton();
    edits_->setWordWrap(true);
    edits_->setObjectName("nextRecordingEdits");
    column_->addBelow(edits_);
}

QWidget* RecordersPanel::buildResultsColumn()
{
    channel_->setPrefix(tr("channel "));
    topImages_->setViewMode(QListView::IconMode);
    topImages_->setIconSize(QSize(96, 96));
    topImages_->setResizeMode(QListView::Adjust);
    topImages_->setMovement(QListView::Static);
    topImages_->setWordWrap(true);
    topImages_->setToolTip(tr("Double-click an image to open it"));
    // Long layer paths keep their ends readable: "features.…denseblock4.conv2:grad".
    layer_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    layer_->setMinimumContentsLength(16);

    auto* browseRow = new QHBoxLayout;
    browseRow->addWidget(new QLabel(tr("Layer:")));
    browseRow->addWidget(layer_, 1);
    browseRow->addWidget(channel_);
    auto* channelPage = new QPushButton(tr("Channel page…"));
    channelPage->setToolTip(tr("The channel's page: an image optimised to excite it beside these top images"));
    browseRow->addWidget(channelPage);
    connect(channelPage, &QPushButton::clicked, this, [this] { requestChannelPage(channel_->value()); });
    connect(layer_, &QComboBox::currentTextChanged, channelPage, [channelPage](const QString& key) {
        const bool output = CaptureKey::parse(key.toStdString()).kind == CaptureKind::Output;
        channelPage->setEnabled(output);
        channelPage->setToolTip(output
                ? tr("The channel's page: an image optimised to excite it beside these top images")
                : tr("Channel pages are for a layer's outputs, not its inputs or gradients"));
    });
    auto* resultsColumn = new QWidget;
    auto* resultsLayout = new QVBoxLayout(resultsColumn);
    resultsLayout->addLayout(browseRow);
    resultsLayout->addWidget(plots_, 3);
    resultsLayout->addWidget(new QLabel(tr("Images with the highest mean activation of the channel:")));
    resultsLayout->addWidget(topImages_, 2);

    connect(layer_, &QComboBox::currentTextChanged, this, &RecordersPanel::showLayer);
    connect(channel_, &QSpinBox::valueChanged, this, &RecordersPanel::showTopImages);
    connect(plots_, &StatisticsPlots::channelClicked, channel_, &QSpinBox::setValue);
    connect(plots_, &StatisticsPlots::channelPageRequested, this, &RecordersPanel::requestChannelPage);
    connect(channel_, &QSpinBox::valueChanged, plots_, &StatisticsPlots::markChannel);
    connect(channel_, &QSpinBox::valueChanged, document_, &Document::setSelectedChannel);
    connect(document_, &Document::channelSelected, this, [this](int channel) {
        if (channel >= 0 && channel <= channel_->maximum())
            channel_->setValue(channel);
    });
    connect(topImages_, &QListWidget::itemActivated, this, [](QListWidgetItem* item) {
        QDesktopServices::openUrl(QUrl::fromLocalFile(item->data(Qt::UserRole).toString()));
    });
    return resultsColumn;
}

void RecordersPanel::connectJobs()
{
    connect(start_, &QPushButton::clicked, this, &RecordersPanel::start);
    connect(column_->exportButton(), &QPushButton::clicked, this, &RecordersPanel::exportRecording);
}

// A recording belongs to the model that made it (export writes the runner's, which a new model
// also drops): its layers, plots and top images go; the folder and settings stay.
void RecordersPanel::resetForModel()
{
    column_->cancelJob(); // a recording of the model before is not this model's
    snapshot_.reset();
    grabs_->clear();
    const QSignalBlocker block(layer_);
    layer_->clear();
    plots_->clear();
    topImages_->clear();
    column_->reset(document_->hasModel() ? tr("Choose a folder of images and the layers to grab, then Start.")
                                         : tr("Open a model first."));
}

// What the next recording will apply; the recording shown says in its summary what it applied,
// and the column marks it out of date when the two differ.
void RecordersPanel::showEdits()
{
    std::vector<std::string> specs;
    for (const auto& edit : document_->edits())
        specs.push_back(edit.toString());
    const auto [edits, whole] = editTexts(specs);
    edits_->setText(edits.isEmpty()
            ? tr("No edits in the module tree: the next recording sees the model as loaded. Edits made there "
                 "(zeroed or scaled channels) apply to recordings; the truncation point does not.")
            : tr("The next recording applies the module tree's edits: %1. (The truncation point does not "
                 "apply.)")
                  .arg(edits.join(", ")));
    edits_->setToolTip(whole.join('\n'));
}

void RecordersPanel::start()
{
    RecordRequest request;
    request.folder = folder_->text().trimmed().toStdString();
    QStringList specs = grabs_->text().split(' ', Qt::SkipEmptyParts);
    if (specs.isEmpty())
        specs = document_->grabs();
    try {
        if (!document_->hasModel())
            throw std::runtime_error("open a model first");
        if (request.folder.empty())
            throw std::runtime_error("choose a folder of images to record");
        if (specs.isEmpty())
            throw std::runtime_error("tick layers in the module tree, or name them in the Grab field");
        for (const auto& spec : specs)
            request.grabs.push_back(GrabSpec::parse(spec.toStdString()));
        request.reduction = reduction_->currentText().toStdString();
        request.condition = condition_->text().trimmed().toStdString();
        request.batchSize = batch_->value();
        request.setup = document_->setup();
        request.targetClass = document_->targetClass();
        request.edits = document_->edits();
        request.manifest
            = windowManifest("Export Recording", controller_->modelKey(), request.setup, request.edits, {});
    } catch (const std::exception& e) {
        column_->summary()->setText(tr("Cannot start: %1").arg(QString::fromStdString(e.what())));
        return;
    }
    JobHandle* job = controller_->start<RecordAnalysis>(request, this);
    connect(job, &JobHandle::succeeded, this, [this, job] {
        const RecordResultPtr result = job->result<RecordResult>();
        showRecording(result);
        Q_EMIT finished(result);
    });
    column_->follow(job, tr("Recording %1 …").arg(specs.join(", ")));
}

void RecordersPanel::exportRecording()
{
    const QString path = askSavePath(
        this, tr("Export Recording"), QString(), tr("PyTorch (*.pt);;NumPy (*.npz);;safetensors (*.safetensors)"));
    if (!path.isEmpty())
        exportTo(path);
}

void RecordersPanel::exportTo(const QString& path)
{
    if (!snapshot_) {
        column_->summary()->setText(tr("Nothing recorded yet: start a folder run first."));
        return;
    }
    // Written on the batch lane: the recording's tensors can be large.
    auto leftOut = std::make_shared<std::vector<std::string>>();
    JobHandle* job = controller_->startTask(
        tr("Error Exporting"), JobLane::Batch,
        [result = snapshot_, file = path.toStdString(), leftOut](
            ModelSource&) { *leftOut = writeRecordResult(file, *result); },
        this);
    connect(job, &JobHandle::succeeded, this, [this, path, leftOut] {
        QStringList keys;
        for (const auto& key : *leftOut)
            keys << QString::fromStdString(key);
        Q_EMIT exported(path, keys);
    });
}

void RecordersPanel::showRecording(const RecordResultPtr& snapshot)
{
    snapshot_ = snapshot;
    column_->finish(snapshot->cancelled);
    column_->exportButton()->setEnabled(true);
    QString text = tr("%1 image(s) in %2 s (%3 images/s), %4 selected by the condition")
                       .arg(snapshot->images)
                       .arg(snapshot->seconds, 0, 'f', 2)
                       .arg(snapshot->imagesPerSecond, 0, 'f', 1)
                       .arg(snapshot->selected);
    if (!snapshot->labelSource.empty())
        text += tr("; labels from %1").arg(QString::fromStdString(snapshot->labelSource));
    if (!snapshot->failures.empty())
        text += tr("; %1 unreadable image(s) skipped").arg(snapshot->failures.size());
    const auto [edits, whole] = editTexts(snapshot->edits);
    if (!edits.isEmpty())
        text += tr("; recorded with the edits %1").arg(edits.join(", "));
    if (snapshot->cancelled)
        text += tr(" — cancelled: what was recorded so far is kept");
    column_->summary()->setText(text);
    column_->summary()->setToolTip(whole.join('\n'));
    const QSignalBlocker block(layer_);
    layer_->clear();
    for (const auto& [key, samples] : snapshot->samples)
        layer_->addItem(QString::fromStdString(key));
    showLayer();
}

void RecordersPanel::showLayer()
{
    if (!snapshot_)
        return;
    const auto it = snapshot_->statistics.find(layer_->currentText().toStdString());
    if (it == snapshot_->statistics.end()) { // reductions other than stats keep no per-channel numbers
        plots_->clear();
        topImages_->clear();
        return;
    }
    channel_->setRange(0, std::max(0, int(it->second.channelMean.size()) - 1));
    plots_->show(it->second);
    plots_->markChannel(channel_->value());
    showTopImages();
}

void RecordersPanel::requestChannelPage(int channel)
{
    const CaptureKey key = CaptureKey::parse(layer_->currentText().toStdString());
    if (!layer_->currentText().isEmpty() && key.kind == CaptureKind::Output)
        Q_EMIT channelPageRequested(QString::fromStdString(key.path), channel);
}

void RecordersPanel::showTopImages()
{
    topImages_->clear();
    if (!snapshot_)
        return;
    const auto it = snapshot_->topSamples.find(layer_->currentText().toStdString());
    if (it == snapshot_->topSamples.end() || channel_->value() >= int(it->second.size()))
        return;
    for (const TopSample& top : it->second[static_cast<size_t>(channel_->value())]) {
        const QString path = QString::fromStdString(snapshot_->imagePaths.at(static_cast<size_t>(top.sample)));
        QImageReader reader(path);
        reader.setAutoTransform(true);
        const QSize size = reader.size();
        if (size.isValid())
            reader.setScaledSize(size.scaled(96, 96, Qt::KeepAspectRatio));
        const QImage image = reader.read();
        auto* item = new QListWidgetItem(
            image.isNull() ? style()->standardIcon(QStyle::SP_FileIcon) : QIcon(QPixmap::fromImage(image)),
            QString("%1\n%2/%3")
                .arg(QString::number(top.value, 'g', 4), QFileInfo(path).dir().dirName(), QFileInfo(path).fileName()),
            topImages_);
        item->setData(Qt::UserRole, path);
        item->setToolTip(tr("%1\nsample %2, mean activation %3\nDouble-click to open")
                             .arg(path)
                             .arg(top.sample)
                             .arg(top.value, 0, 'g', 6));
    }
}

} // namespace torchscope
