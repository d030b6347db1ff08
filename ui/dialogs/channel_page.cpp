#include "dialogs/channel_page.h"

#include "dialogs/save_dialog.h"
#include "document/document.h"
#include "jobs/run_controller.h"
#include "jobs/visualize_types.h"
#include "views/color_bar.h"
#include "views/overlay_image.h"

#include <QComboBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QImageReader>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSaveFile>
#include <QSpinBox>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <map>

namespace torchscope {
namespace {

constexpr int PictureSide = 224, TopSide = 112;

// Optimised images of this session (without maps over top images), so reopening a page, or going
// back to settings that ran, shows them at once.
std::map<std::string, VisualizeJobResult>& cache()
{
    static std::map<std::string, VisualizeJobResult> results;
    return results;
}

QPixmap enlarged(const QImage& image, int side)
{
    return QPixmap::fromImage(image.scaled(
        side, side, Qt::KeepAspectRatio, image.width() < side / 2 ? Qt::FastTransformation : Qt::SmoothTransformation));
}

} // namespace

VisualizeJobResult drawnVisualization(const ChannelVisualization& result)
{
    VisualizeJobResult out;
    out.key = result.key;
    out.mapsOnly = result.mapsOnly;
    if (!result.mapsOnly)
        out.image = overlayImage(result.image, nullptr, 0, 0, ColorMap::Magma, 0.f); // the picture alone
    out.value = result.value;
    out.steps = result.steps;
    out.cancelled = result.cancelled;
    for (const auto& warning : result.warnings)
        out.warnings << QString::fromStdString(warning);
    for (size_t i = 0; i < result.topMaps.size() && i < result.topPictures.size(); ++i) {
        const FloatTensor& map = result.topMaps[i];
        out.topMaps.push_back(
            overlayImage(result.topPictures[i], map.values.data(), map.shape[1], map.shape[0], ColorMap::Magma, 0.55f));
    }
    out.mapLow = result.mapLow;
    out.mapHigh = result.mapHigh;
    return out;
}

ChannelPage::ChannelPage(Document* document, RunController* controller, RecordResultPtr recording, const QString& layer,
    int channel, QWidget* parent)
    : QDialog(parent)
    , document_(document)
    , recording_(std::move(recording))
    , layer_(layer)
    , channel_(channel)
    , controller_(controller)
    , steps_(new QSpinBox)
    , parameterization_(new QComboBox)
    , seed_(new QSpinBox)
    , size_(new QSpinBox)
    , run_(new QPushButton(tr("Optimise")))
    , cancel_(new QPushButton(tr("Cancel")))
    , progress_(new QProgressBar)
    , image_(new QLabel)
    , value_(new QLabel)
    , notes_(new QLabel)
    , concepts_(new QLabel)
    , statistics_(new QLabel)
    , topGrid_(new QGridLayout)
    , mapsScale_(new ColorBar)
{
    setWindowTitle(tr("%1 · channel %2").arg(layer_).arg(channel_));
    steps_->setRange(8, 4096);
    steps_->setValue(256);
    steps_->setToolTip(tr("Adam steps (learning rate 0.05)"));
    parameterization_->addItem(tr("FFT (1/f spectrum)"), "fft");
    parameterization_->addItem(tr("Pixels"), "pixel");
    seed_->setRange(0, 1000000);
    const Preprocessing& preprocessing = document_->setup().preprocessing;
    if (preprocessing.outputHeight() > 0 && preprocessing.outputWidth() > 0) {
        // 0: the size the setup gives every input.
        size_->setRange(0, 1024);
        size_->setSpecialValueText(
            tr("the model's, %1×%2").arg(preprocessing.outputHeight()).arg(preprocessing.outputWidth()));
        size_->setValue(0);
    } else {
        size_->setRange(16, 1024);
        size_->setValue(224);
    }
    size_->setSuffix(tr(" px"));
    size_->setToolTip(tr("The optimised image's side in pixels"));
    image_->setFixedSize(PictureSide, PictureSide);
    image_->setAlignment(Qt::AlignCenter);
    image_->setStyleSheet("background: palette(mid)");
    notes_->setWordWrap(true);
    value_->setWordWrap(true); // "cancelled after N steps: …" does not widen the page
    statistics_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    cancel_->setEnabled(false);

    auto* settings = new QFormLayout;
    settings->addRow(tr("Steps"), steps_);
    settings->addRow(tr("Image"), parameterization_);
    settings->addRow(tr("Seed"), seed_);
    settings->addRow(tr("Size"), size_);
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(run_);
    buttons->addWidget(cancel_);
    auto* optimisedBox = new QGroupBox(tr("Optimised to excite it"));
    auto* optimisedLayout = new QVBoxLayout(optimisedBox);
    optimisedLayout->addWidget(image_, 0, Qt::AlignHCenter);
    optimisedLayout->addWidget(value_);
    optimisedLayout->addWidget(progress_);
    optimisedLayout->addLayout(settings);
    optimisedLayout->addLayout(buttons);
    optimisedLayout->addWidget(notes_);
    optimisedLayout->addStretch();

    auto* topBox = new QGroupBox(
        tr("Top images of the last recording, the channel's map over them (one scale, lowest to highest)"));
    auto* topLayout = new QVBoxLayout(topBox);
    auto* mapsRow = new QHBoxLayout;
    mapsRow->addLayout(topGrid_, 1);
    mapsScale_->setMinimumHeight(160);
    mapsScale_->hide(); // until there are maps
    mapsRow->addWidget(mapsScale_);
    topLayout->addLayout(mapsRow);
    topLayout->addStretch();
    topLayout->addWidget(statistics_);

    auto* exportButton = new QPushButton(tr("Export page as PNG…"));
    auto* close = new QPushButton(tr("Close"));
    auto* bottom = new QHBoxLayout;
    bottom->addStretch();
    bottom->addWidget(exportButton);
    bottom->addWidget(close);
    auto* columns = new QHBoxLayout;
    columns->addWidget(optimisedBox);
    columns->addWidget(topBox, 1);
    auto* layout = new QVBoxLayout(this);
    auto* title
        = new QLabel(tr("<b>%1</b> · %2 · channel %3")
                         .arg(QFileInfo(document_->modelPath()).fileName().toHtmlEscaped(), layer_.toHtmlEscaped())
                         .arg(channel_));
    layout->addWidget(title);
    concepts_->setWordWrap(true);
    concepts_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    concepts_->hide();
    layout->addWidget(concepts_);
    layout->addLayout(columns, 1);
    layout->addLayout(bottom);

    connect(run_, &QPushButton::clicked, this, &ChannelPage::optimise);
    connect(cancel_, &QPushButton::clicked, this, [this] {
        if (job_)
            job_->cancel();
    });
    connect(close, &QPushButton::clicked, this, &QDialog::close);
    // The page is of the model it was opened on: another model closes it (its job is cancelled
    // on close); the same file again (a device change) keeps it.
    connect(document_, &Document::modelChanged, this, [this, model = document_->modelPath()] {
        if (document_->modelPath() != model)
            QDialog::close();
    });
    connect(exportButton, &QPushButton::clicked, this, [this] {
        const QString path = askSavePath(this, tr("Export the channel page"),
            QString("%1_channel_%2.png").arg(layer_).arg(channel_), tr("PNG image (*.png)"));
        if (!path.isEmpty())
            exportTo(path);
    });
    fillRecording();
}

ChannelPage::~ChannelPage()
{
    if (running_ && job_)
        job_->cancel(); // nobody is left to see it
}

bool ChannelPage::isRunning() const
{
    return running_;
}

QString ChannelPage::valueText() const
{
    return value_->text();
}

std::vector<std::string> ChannelPage::topImagePaths() const
{
    std::vector<std::string> paths;
    if (!recording_)
        return paths;
    const auto top = recording_->topSamples.find(layer_.toStdString());
    if (top == recording_->topSamples.end() || channel_ >= static_cast<int>(top->second.size()))
        return paths;
    for (const TopSample& sample : top->second[static_cast<size_t>(channel_)])
        paths.push_back(recording_->imagePaths.at(static_cast<size_t>(sample.sample)));
    return paths;
}

void ChannelPage::optimise()
{
    if (running_)
        return;
    VisualizeRequest request;
    request.model = document_->modelPath().toStdString();
    request.device = document_->device().toStdString();
    request.preprocessing = document_->setup().preprocessing;
    request.config.layer = layer_.toStdString();
    request.config.steps = steps_->value();
    request.config.seed = seed_->value();
    request.config.size = size_->value();
    request.config.parameterization = parseParameterization(parameterization_->currentData().toString().toStdString());
    Objective objective;
    objective.channel = channel_;
    request.config.objectives = {objective};
    request.topImages = topImagePaths();
    if (const auto hit = cache().find(request.cacheKey()); hit != cache().end()) {
        showOutcome(hit->second);
        request.mapsOnly = true;
        if (!mapsShown_ && !request.topImages.empty())
            startJob(request);
        return;
    }
    notes_->clear();
    progress_->setRange(0, request.config.steps);
    progress_->setValue(0);
    startJob(request);
}

void ChannelPage::startJob(const VisualizeRequest& request)
{
    running_ = true;
    run_->setEnabled(false);
    cancel_->setEnabled(!request.mapsOnly);
    JobHandle* job = controller_->start<VisualizeAnalysis>(request, this);
    job_ = job;
    connect(job, &JobHandle::progress, this, [this](qint64 step, qint64 steps, const QString& objective) {
        progress_->setRange(0, int(steps));
        progress_->setValue(int(step));
        value_->setText(tr("step %1 of %2: objective %3").arg(step).arg(steps).arg(objective));
    });
    connect(job, &JobHandle::succeeded, this, [this, job] {
        const VisualizeJobResult outcome = drawnVisualization(*job->result<ChannelVisualization>());
        running_ = false;
        showMaps(outcome);
        if (outcome.mapsOnly) {
            run_->setEnabled(true);
            cancel_->setEnabled(false);
            return;
        }
        if (!outcome.cancelled) {
            VisualizeJobResult cached = outcome;
            cached.topMaps.clear();
            cache()[outcome.key] = cached;
        }
        showOutcome(outcome);
    });
    connect(job, &JobHandle::failed, this, [this](const QString&, const QString& message) {
        notes_->setText(message); // the window's error box and log say it too
    });
    connect(job, &JobHandle::finished, this, [this] { // succeeded, failed or cancelled before it started
        running_ = false;
        run_->setEnabled(true);
        cancel_->setEnabled(false);
    });
}

void ChannelPage::showMaps(const VisualizeJobResult& outcome)
{
    for (size_t i = 0; i < topPictures_.size() && i < outcome.topMaps.size(); ++i)
        if (!outcome.topMaps[i].isNull()) {
            topPictures_[i]->setPixmap(enlarged(outcome.topMaps[i], TopSide));
            mapsShown_ = true;
        }
    if (mapsShown_ && outcome.mapHigh >= outcome.mapLow) {
        mapsScale_->setScale(outcome.mapLow, outcome.mapHigh, ColorMap::Magma, tr("channel %1").arg(channel_));
        mapsScale_->show();
    }
    if (outcome.mapsOnly && !outcome.warnings.isEmpty())
        notes_->setText(outcome.warnings.join("\n"));
}

void ChannelPage::showOutcome(const VisualizeJobResult& outcome)
{
    run_->setEnabled(!running_);
    cancel_->setEnabled(false);
    progress_->setValue(progress_->maximum());
    image_->setPixmap(enlarged(outcome.image, PictureSide));
    value_->setText(outcome.cancelled
            ? tr("cancelled after %1 steps: objective %2").arg(outcome.steps).arg(outcome.value, 0, 'g', 4)
            : tr("channel mean %1 after %2 steps").arg(outcome.value, 0, 'g', 4).arg(outcome.steps));
    notes_->setText(outcome.warnings.join("\n"));
    Q_EMIT optimised();
}

void ChannelPage::fillRecording()
{
    const std::vector<std::string> paths = topImagePaths();
    if (paths.empty()) {
        statistics_->setText(tr("No recording of %1 with statistics yet: record a folder in the Recorders tab "
                                "(reduction stats) to see the images that excite this channel most.")
                                 .arg(layer_));
        statistics_->setWordWrap(true);
        return;
    }
    const auto& top = recording_->topSamples.at(layer_.toStdString())[static_cast<size_t>(channel_)];
    constexpr int Columns = 3;
    for (size_t i = 0; i < paths.size(); ++i) {
        const QString path = QString::fromStdString(paths[i]);
        QImageReader reader(path);
        reader.setAutoTransform(true);
        auto* picture = new QLabel;
        picture->setFixedSize(TopSide, TopSide);
        picture->setAlignment(Qt::AlignCenter);
        picture->setPixmap(enlarged(reader.read(), TopSide));
        picture->setToolTip(path);
        auto* caption = new QLabel(QString("%1\n%2").arg(QFileInfo(path).fileName()).arg(top[i].value, 0, 'g', 4));
        caption->setAlignment(Qt::AlignHCenter);
        const int row = static_cast<int>(i) / Columns * 2, column = static_cast<int>(i) % Columns;
        topGrid_->addWidget(picture, row, column);
        topGrid_->addWidget(caption, row + 1, column);
        topPictures_.push_back(picture);
    }
    const auto stats = recording_->statistics.find(layer_.toStdString());
    if (stats != recording_->statistics.end() && channel_ < static_cast<int>(stats->second.channelMean.size())) {
        const LayerStatistics& s = stats->second;
        const auto c = static_cast<size_t>(channel_);
        statistics_->setText(tr("Over %1 images: mean %2, std %3, min %4, max %5, zero %6%")
                                 .arg(s.samples)
                                 .arg(s.channelMean[c], 0, 'g', 4)
                                 .arg(s.channelStd[c], 0, 'g', 4)
                                 .arg(s.channelMin[c], 0, 'g', 4)
                                 .arg(s.channelMax[c], 0, 'g', 4)
                                 .arg(100.0 * s.channelZeroFraction[c], 0, 'f', 1));
    }
}

void ChannelPage::exportTo(const QString& path)
{
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) || !grab().toImage().save(&file, "PNG") || !file.commit())
        Q_EMIT failed(tr("Export failed"), tr("Could not write %1: %2").arg(path, file.errorString()));
}

void ChannelPage::setConcepts(const QString& labels)
{
    concepts_->setText(labels.isEmpty() ? QString() : tr("Concepts (dissection): %1").arg(labels));
    concepts_->setVisible(!labels.isEmpty());
}

QString ChannelPage::conceptsText() const
{
    return concepts_->text();
}

} // namespace torchscope
