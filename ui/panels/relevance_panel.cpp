#include "panels/relevance_panel.h"

#include "document/document.h"
#include "export/manifest.h"
#include "jobs/run_controller.h"
#include "jobs/workbench_jobs.h"
#include "panels/job_setup_column.h"
#include "panels/setup_and_results.h"
#include "relevance/relevance_rules.h"
#include "views/color_bar.h"
#include "views/empty_plot.h"
#include "views/layer_combo.h"
#include "views/overlay_image.h"
#include "views/plot_colours.h"
#include "views/plot_file.h"
#include "views/qcustomplot_include.h"

#include <QComboBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPainter>
#include <QPushButton>
#include <QScrollArea>
#include <QSpinBox>
#include <QSplitter>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace torchscope {
namespace {

constexpr int ReferenceSize = 104;
constexpr int BarWidth = 88; // a colour bar beside a map
constexpr int MostBars = 24; // the most relevant channels by |share|: a 512-channel layer stays readable
constexpr int PixelsPerBar = 24; // fewer bars where the plot is narrow, so that their labels stay apart

// A signed map over the picture: cool-warm, symmetric about 0 (blue takes relevance away, red gives it).
QPixmap signedOverlay(const FloatTensor& picture, const FloatTensor& map, double bound, int width, int height)
{
    const std::vector<float> unit = scaledToUnit(map, -bound, bound);
    const QImage image = overlayImage(picture, unit.data(), map.shape[1], map.shape[0], ColorMap::CoolWarm, 0.7f);
    return QPixmap::fromImage(image.scaled(width, height, Qt::IgnoreAspectRatio, Qt::SmoothTransformation));
}

double largestMagnitude(const FloatTensor& map)
{
    double bound = 0.0;
    for (const float v : map.values)
        bound = std::max(bound, std::abs(static_cast<double>(v)));
    return bound > 0.0 ? bound : 1.0;
}

// The picture's size at a fixed area: non-square images keep their proportions.
QSize fitted(const FloatTensor& picture, int size)
{
    const double h = picture.shape.size() == 3 ? static_cast<double>(picture.shape[0]) : 1.0;
    const double w = picture.shape.size() == 3 ? static_cast<double>(picture.shape[1]) : 1.0;
    return h >= w ? QSize(static_cast<int>(size * w / h), size) : QSize(size, static_cast<int>(size * h / w));
}

} // namespace

RelevancePanel::RelevancePanel(Document* document, RunController* controller, QWidget* parent)
    : QWidget(parent)
    , document_(document)
    , controller_(controller)
    , column_(new JobSetupColumn)
    , layer_(new QComboBox)
    , channels_(new QLineEdit(QString::fromStdString(ConceptRelevanceRequest{}.channels.toString())))
    , target_(new QSpinBox)
    , composite_(new QComboBox)
    , attentionRule_(new QComboBox)
    , rules_(new QLineEdit)
    , folder_(new QLineEdit)
    , top_(new QSpinBox)
    , referenceBy_(new QComboBox)
    , start_(new QPushButton(tr("Explain the Channels")))
    , image_(new QComboBox)
    , bars_(new QCustomPlot)
    , wholeMap_(new QLabel)
    , wholeBar_(new ColorBar)
    , channelMap_(new QLabel)
    , channelBar_(new ColorBar)
    , caption_(new QLabel)
    , referenceTitle_(new QLabel)
    , referenceRow_(new QHBoxLayout)
    , channelPage_(new QPushButton(tr("Open the Channel Page")))
{
    buildForm();
    column_->addStartButton(start_);
    buildExportMenu();
    layOutSetupAndResults(this, column_, buildResults());
    connectJobs();
    resetForModel();
}

void RelevancePanel::buildForm()
{
    const ConceptRelevanceRequest defaults; // the request's own defaults, as the CLI's options show them
    makeLayerCombo(layer_);
    layer_->setMinimumContentsLength(14);
    layer_->setToolTip(tr("The layer whose channels are measured: a block's or an activation's output (a "
                          "convolution that a batch norm follows is measured before the norm, which then cannot "
                          "be merged into it)"));
    channels_->setToolTip(tr("top:K (each image's K most relevant channels) or channel indices (1,5,9): the "
                             "channels that get a conditional map and references"));
    target_->setRange(-1, 1000000);
    target_->setSpecialValueText(tr("each image's prediction"));
    target_->setValue(static_cast<int>(defaults.targetClass));
    for (const auto& name : compositeNames())
        composite_->addItem(QString::fromStdString(name));
    composite_->setCurrentText(QString::fromStdString(defaults.composite));
    composite_->setToolTip(tr("LRP's rules by layer, as Zennit's composites"));
    attentionRule_->addItem(tr("CP-LRP (weights held fixed)"), QString("cp"));
    attentionRule_->addItem(tr("AttnLRP (uniform rule)"), QString("attnlrp"));
    rules_->setPlaceholderText(tr("e.g. features.0=flat"));
    rules_->setToolTip(tr("PATH=RULE overrides, separated by spaces or semicolons"));
    folder_->setPlaceholderText(tr("none: no reference images"));
    folder_->setToolTip(tr("A folder of images (class subfolders give each image its class): each conditioned "
                           "channel's top images in it"));
    top_->setRange(1, 64);
    top_->setValue(defaults.top);
    top_->setToolTip(tr("Reference images per channel"));
    for (const auto& mode : referenceModes())
        referenceBy_->addItem(QString::fromStdString(mode));
    referenceBy_->setCurrentText(QString::fromStdString(defaults.referenceBy));
    referenceBy_->setToolTip(tr("relevance: the images where the channel carries most of the class's relevance "
                                "(RelMax); activation: where it is most active (ActMax)"));
    QFormLayout* form = column_->form();
    form->addRow(tr("Layer:"), layer_);
    form->addRow(tr("Channels:"), channels_);
    form->addRow(tr("Target:"), target_);
    form->addRow(tr("LRP composite:"), composite_);
    form->addRow(tr("LRP attention:"), attentionRule_);
    form->addRow(tr("LRP rules:"), rules_);
    column_->addFolderRow(tr("References:"), folder_, tr("Reference Images"));
    form->addRow(tr("Per channel:"), top_);
    form->addRow(tr("Ranked by:"), referenceBy_);
    auto* imageRow = new QFormLayout;
    imageRow->addRow(tr("Image shown:"), image_);
    column_->addBelow(imageRow);
    column_->addBelow(caption_); // the figures of the image and channel shown, where the form leaves room
}

QWidget* RelevancePanel::buildResults()
{
    bars_->setMinimumHeight(160);
    bars_->setToolTip(tr("Each channel's share of the relevance at the layer (relevance / Σ|relevance|). Blue: the "
                         "conditioned channels; click one to show its map and references. Grey: channels outside "
                         "the choice (give them under Channels)"));
    for (QLabel* map : {wholeMap_, channelMap_}) {
        map->setFixedSize(mapSize_, mapSize_);
        map->setAlignment(Qt::AlignCenter);
    }
    wholeBar_->setFixedSize(BarWidth, mapSize_);
    channelBar_->setFixedSize(BarWidth, mapSize_);
    caption_->setWordWrap(true);
    caption_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    maps_ = new QGridLayout;
    channelTitle_ = new QLabel(tr("<b>The channel's map</b>"));
    wholeTitle_ = new QLabel(tr("<b>The whole LRP map</b>"));
    placeMaps(true);

    referenceRow_->setSpacing(6);
    referenceRow_->addStretch(1);
    auto* referenceStrip = new QWidget;
    referenceStrip->setLayout(referenceRow_);
    auto* referenceScroll = new QScrollArea;
    referenceScroll->setWidget(referenceStrip);
    referenceScroll->setWidgetResizable(true);
    referenceScroll->setFrameShape(QFrame::NoFrame);
    referenceScroll->setMinimumHeight(ReferenceSize + 60);
    referenceTitle_->setWordWrap(true);

    auto* lower = new QWidget;
    auto* lowerColumn = new QVBoxLayout(lower);
    lowerColumn->setContentsMargins(4, 0, 4, 0);
    lowerColumn->addLayout(maps_);
    lowerColumn->addWidget(referenceTitle_);
    lowerColumn->addWidget(referenceScroll);
    lowerColumn->addWidget(channelPage_, 0, Qt::AlignLeft);
    lowerColumn->addStretch(1);
    auto* lowerScroll = new QScrollArea;
    lowerScroll->viewport()->installEventFilter(this); // the maps take the width there is
    lowerScroll_ = lowerScroll;
    bars_->installEventFilter(this); // as many bars as the plot's width keeps readable
    lowerScroll->setWidget(lower);
    lowerScroll->setWidgetResizable(true);
    lowerScroll->setFrameShape(QFrame::NoFrame);

    auto* results = new QSplitter(Qt::Vertical);
    results->addWidget(bars_);
    results->addWidget(lowerScroll);
    results->setStretchFactor(0, 2);
    results->setStretchFactor(1, 3);
    results->setChildrenCollapsible(false);
    return results;
}

void RelevancePanel::buildExportMenu()
{
    column_->addExportMenu(
        {
            {tr("Relevances, Maps and References as JSON…"), tr("Export CRP"), "crp.json", tr("JSON (*.json)"),
                QString()},
            {tr("Relevances and Maps as .npz, .pt or .safetensors…"), tr("Export CRP"), "crp.npz",
                tr("NumPy (*.npz);;PyTorch (*.pt);;safetensors (*.safetensors)"), QString()},
            {tr("Channel Plot as PNG or PDF…"), tr("Export Channel Plot"), "crp_channels.png",
                tr("PNG image (*.png);;PDF (*.pdf)"), "bars"},
        },
        [this](const QString& path, const QString& plot) { return exportTo(path, plot); });
    connect(column_, &JobSetupColumn::exportFailed, this, &RelevancePanel::failed);
}

void RelevancePanel::connectJobs()
{
    connect(start_, &QPushButton::clicked, this, &RelevancePanel::start);
    connect(image_, &QComboBox::currentIndexChanged, this, [this] { redraw(); });
    connect(bars_, &QCustomPlot::plottableClick, this, [this](QCPAbstractPlottable* plottable, int index) {
        const auto* bars = qobject_cast<QCPBars*>(plottable);
        if (!bars || index < 0 || index >= bars->data()->size())
            return;
        const auto position = static_cast<size_t>(std::lround(bars->data()->at(index)->key));
        if (position < barChannels_.size())
            pick(barChannels_[position]);
    });
    connect(channelPage_, &QPushButton::clicked, this, [this] {
        if (result_ && channel_ >= 0)
            Q_EMIT channelPageRequested(QString::fromStdString(result_->layer), static_cast<int>(channel_));
    });
    connect(document_, &Document::modelChanged, this, &RelevancePanel::resetForModel);
    connect(document_, &Document::modulesChanged, this, &RelevancePanel::fillLayers);
    // A layer the user picked stays when the module list is filled again (after the dry run); the
    // default follows the shapes.
    connect(layer_, &QComboBox::activated, this, [this] { layerPicked_ = true; });
    if (layer_->lineEdit())
        connect(layer_->lineEdit(), &QLineEdit::textEdited, this, [this] { layerPicked_ = true; });
    column_->watchInputs(document_, ImagesInput | SetupInput);
}

void RelevancePanel::fillLayers()
{
    fillLayerCombo(layer_, document_->model().modules, layerPicked_);
}

void RelevancePanel::resetForModel()
{
    column_->cancelJob();
    result_.reset();
    soFar_.reset();
    channel_ = -1;
    image_->clear();
    layerPicked_ = false;
    fillLayers();
    showEmptyPlot(bars_,
        document_->modelPath().isEmpty()
            ? tr("Open a model and add images: which channels of a layer carry each prediction")
            : tr("Pick a layer and Explain the Channels"));
    for (QLabel* map : {wholeMap_, channelMap_})
        map->clear();
    wholeBar_->clearScale();
    channelBar_->clearScale();
    caption_->clear();
    referenceTitle_->clear();
    drawReferences();
    channelPage_->setEnabled(false);
    column_->reset(tr("Concept Relevance Propagation: each channel's share of the relevance at a layer, its "
                      "conditional map, and the images in which it matters most."));
}

void RelevancePanel::start()
{
    QString problem;
    if (document_->modelPath().isEmpty())
        problem = tr("Open a model first.");
    else if (document_->images().isEmpty())
        problem = tr("Add images to the window (drop them on the strip) to explain them.");
    else if (layer_->currentText().isEmpty())
        problem = tr("Pick a layer whose channels are measured.");
    ConceptRelevanceRequest request;
    try {
        request.channels = ChannelChoice::parse(channels_->text().trimmed().toStdString());
    } catch (const std::exception& e) {
        if (problem.isEmpty())
            problem = tr("Channels: %1").arg(QString::fromStdString(e.what()));
    }
    try {
        request.relevanceRules = RuleOverride::parseList(rules_->text().toStdString());
    } catch (const std::exception& e) {
        if (problem.isEmpty())
            problem = tr("LRP rules: %1").arg(QString::fromStdString(e.what()));
    }
    if (!problem.isEmpty()) {
        column_->summary()->setText(problem);
        return;
    }
    for (const auto& image : document_->images())
        request.images.push_back(image.toStdString());
    request.setup = document_->setup();
    request.layer = layer_->currentText().toStdString();
    request.targetClass = target_->value();
    request.composite = composite_->currentText().toStdString();
    request.attentionRule = attentionRule_->currentData().toString().toStdString();
    request.referenceFolder = folder_->text().trimmed().toStdString();
    request.top = top_->value();
    request.referenceBy = referenceBy_->currentText().toStdString();
    shown_ = request;
    JobHandle* job = controller_->start<ConceptRelevanceAnalysis>(request, this);
    connect(job, &JobHandle::partDelivered, this, [this, job] { addImage(*job->part<CrpImageResult>()); });
    connect(job, &JobHandle::succeeded, this, [this, job] { showResult(job->result<ConceptRelevanceResult>()); });
    connect(job, &JobHandle::failed, this,
        [this] { showEmptyPlot(bars_, tr("CRP failed: the reason is on the left and in the log.")); });
    result_.reset();
    soFar_ = std::make_shared<ConceptRelevanceResult>();
    soFar_->layer = request.layer;
    channel_ = -1;
    {
        const QSignalBlocker block(image_);
        image_->clear();
    }
    showEmptyPlot(bars_,
        tr("Explaining %n image(s)… each image's channels appear here as soon as they are measured.", nullptr,
            static_cast<int>(request.images.size())));
    column_->exportButton()->setEnabled(false);
    column_->follow(job, tr("Explaining %n image(s)…", nullptr, static_cast<int>(request.images.size())));
}

void RelevancePanel::addImage(const CrpImageResult& part)
{
    if (!soFar_ || part.index != soFar_->images.size())
        return; // of a job no longer shown
    soFar_->images.push_back(part.image);
    image_->addItem(QFileInfo(QString::fromStdString(part.image.image)).fileName());
    if (soFar_->images.size() == 1)
        redraw();
}

void RelevancePanel::showResult(const ConceptRelevanceResultPtr& result)
{
    soFar_.reset();
    result_ = result;
    column_->finish(result->cancelled);
    column_->exportButton()->setEnabled(!result->images.empty());
    const int shownImage = std::max(0, image_->currentIndex());
    {
        const QSignalBlocker block(image_);
        image_->clear();
        for (const auto& image : result->images)
            image_->addItem(QFileInfo(QString::fromStdString(image.image)).fileName());
        image_->setCurrentIndex(std::min(shownImage, image_->count() - 1));
    }
    QStringList lines;
    lines << tr("%n image(s) at %1: %2 channels%3", nullptr, static_cast<int>(result->images.size()))
                 .arg(QString::fromStdString(result->layer))
                 .arg(result->channelCount)
                 .arg(result->tokens ? tr(" (the last dim of its tokens)") : QString());
    if (!result->referenceFolder.empty())
        lines << tr("References by %1 over %n image(s)", nullptr, static_cast<int>(result->referenceImages))
                     .arg(QString::fromStdString(result->referenceBy));
    // What the rules do not cover: a few lines here (a squeeze-and-excitation gate per block would
    // push the setup out of sight), all of them in the summary's tooltip.
    QStringList uncovered;
    for (const auto& line : result->coverage.uncovered)
        uncovered << QString::fromStdString(line);
    const int listed = uncovered.size() <= 3 ? static_cast<int>(uncovered.size()) : 2;
    for (int i = 0; i < listed; ++i)
        lines << tr("Not covered by the rules: %1").arg(uncovered[i]);
    if (listed < uncovered.size())
        lines << tr(
            "… and %n more not covered (hover here for all)", nullptr, static_cast<int>(uncovered.size()) - listed);
    column_->summary()->setToolTip(
        uncovered.isEmpty() ? QString() : tr("Not covered by the rules:\n%1").arg(uncovered.join('\n')));
    for (const auto& warning : result->warnings)
        lines << QString::fromStdString(warning);
    if (result->cancelled)
        lines << tr("Cancelled: what finished is shown.");
    for (const auto& [image, why] : result->failures)
        lines << tr("Left out %1: %2").arg(QString::fromStdString(image), QString::fromStdString(why));
    column_->summary()->setText(lines.join('\n'));
    redraw();
    Q_EMIT finished(result);
}

void RelevancePanel::redraw()
{
    const auto* shown = result_ ? result_.get() : soFar_.get();
    const int index = image_->currentIndex();
    if (!shown || index < 0 || index >= static_cast<int>(shown->images.size()))
        return;
    const CrpImage& image = shown->images[static_cast<size_t>(index)];
    drawBars(image);
    const bool conditioned = std::any_of(
        image.channels.begin(), image.channels.end(), [this](const CrpChannel& c) { return c.channel == channel_; });
    if (!conditioned && !image.channels.empty())
        channel_ = image.channels.front().channel;
    drawMaps(image);
    drawReferences();
}

void RelevancePanel::drawBars(const CrpImage& image)
{
    prepareFilledPlot(bars_);
    bars_->clearPlottables();
    std::vector<int64_t> order(image.shares.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return std::abs(image.shares[static_cast<size_t>(a)]) > std::abs(image.shares[static_cast<size_t>(b)]);
    });
    const int fit = std::clamp(bars_->width() / PixelsPerBar, 6, MostBars);
    order.resize(std::min<size_t>(order.size(), static_cast<size_t>(fit)));
    // Blue: the conditioned channels (they have a map); grey: the others; red: the one shown.
    auto* bars = new QCPBars(bars_->xAxis, bars_->yAxis);
    auto* others = new QCPBars(bars_->xAxis, bars_->yAxis);
    auto* picked = new QCPBars(bars_->xAxis, bars_->yAxis);
    bars->setBrush(seriesColour(0));
    others->setBrush(QColor(180, 180, 180));
    picked->setBrush(QColor(214, 39, 40));
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    barChannels_.assign(order.begin(), order.end());
    for (size_t k = 0; k < order.size(); ++k) {
        const int64_t c = order[k];
        const double share = image.shares[static_cast<size_t>(c)];
        const bool conditioned = std::any_of(
            image.channels.begin(), image.channels.end(), [c](const CrpChannel& ch) { return ch.channel == c; });
        (c == channel_ ? picked : conditioned ? bars : others)->addData(static_cast<double>(k), share);
        ticker->addTick(static_cast<double>(k), QString::number(c));
    }
    for (QCPBars* b : {bars, others, picked}) {
        b->setPen(Qt::NoPen);
        b->setWidth(0.8);
    }
    bars_->xAxis->setTicker(ticker);
    bars_->xAxis->setTickLabelRotation(order.size() > 12 ? 60 : 0);
    bars_->xAxis->setLabel(tr("channel (the %n most relevant by |share|)", nullptr, static_cast<int>(order.size())));
    bars_->yAxis->setLabel(tr("share"));
    bars_->xAxis->setRange(-0.6, static_cast<double>(order.size()) - 0.4);
    bars_->rescaleAxes(true);
    bars_->xAxis->setRange(-0.6, static_cast<double>(order.size()) - 0.4);
    const QCPRange y = bars_->yAxis->range();
    bars_->yAxis->setRange(std::min(0.0, y.lower) - 0.05 * y.size() - 1e-9, std::max(0.0, y.upper) + 0.1 * y.size());
    bars_->setInteractions(QCP::iSelectPlottables);
    bars_->replot(QCustomPlot::rpQueuedReplot);
}

void RelevancePanel::pick(int64_t channel)
{
    channel_ = channel;
    redraw();
}

void RelevancePanel::drawMaps(const CrpImage& image)
{
    const double bound = largestMagnitude(image.map);
    const QSize size = fitted(image.picture, mapSize_);
    wholeMap_->setPixmap(signedOverlay(image.picture, image.map, bound, size.width(), size.height()));
    wholeBar_->setScale(-bound, bound, ColorMap::CoolWarm, tr("relevance"));
    const auto found = std::find_if(
        image.channels.begin(), image.channels.end(), [this](const CrpChannel& c) { return c.channel == channel_; });
    QString text = tr("<b>%1</b> explains %2 (logit %3). Relevance at the layer: %4; at the input: %5.")
                       .arg(QFileInfo(QString::fromStdString(image.image)).fileName(),
                           QString::fromStdString(image.targetDescription))
                       .arg(image.score, 0, 'g', 4)
                       .arg(image.layerSum, 0, 'g', 4)
                       .arg(image.inputSum, 0, 'g', 4);
    if (found == image.channels.end()) {
        channelMap_->setText(tr("Click a conditioned channel's bar"));
        channelBar_->clearScale();
        channelPage_->setEnabled(false);
    } else {
        const double channelBound = largestMagnitude(found->map);
        channelMap_->setPixmap(signedOverlay(image.picture, found->map, channelBound, size.width(), size.height()));
        channelBar_->setScale(-channelBound, channelBound, ColorMap::CoolWarm, tr("channel %1").arg(found->channel));
        text += tr("<br>Channel <b>%1</b>: share %2, relevance %3, of which %4 reaches the input.")
                    .arg(found->channel)
                    .arg(found->share, 0, 'f', 4)
                    .arg(found->relevance, 0, 'g', 4)
                    .arg(found->mapSum, 0, 'g', 4);
        channelPage_->setEnabled(true);
    }
    caption_->setText(text);
}

void RelevancePanel::drawReferences()
{
    for (QLabel* label : references_) {
        referenceRow_->removeWidget(label);
        delete label;
    }
    references_.clear();
    if (!result_ || result_->referenceFolder.empty()) {
        referenceTitle_->setText(result_
                ? tr("Give a folder under References to see the images in which each channel matters most.")
                : QString());
        return;
    }
    const auto entry = std::find_if(result_->references.begin(), result_->references.end(),
        [this](const CrpChannelReferences& r) { return r.channel == channel_; });
    if (entry == result_->references.end()) {
        referenceTitle_->setText(tr("No references for channel %1.").arg(channel_));
        return;
    }
    referenceTitle_->setText(tr("<b>Channel %1's top images by %2</b> (the cell where it peaks outlined):")
                                 .arg(channel_)
                                 .arg(QString::fromStdString(result_->referenceBy)));
    for (const auto& reference : entry->references) {
        auto* label = new QLabel;
        label->setAlignment(Qt::AlignCenter);
        label->setToolTip(tr("%1\nshare %2, class %3")
                              .arg(QString::fromStdString(reference.image))
                              .arg(reference.value, 0, 'f', 4)
                              .arg(reference.target));
        const auto picture = result_->referencePictures.find(reference.sample);
        if (picture != result_->referencePictures.end()) {
            const FloatTensor& p = picture->second;
            const QSize size = fitted(p, ReferenceSize);
            QPixmap pixmap = QPixmap::fromImage(overlayImage(p, nullptr, 0, 0, ColorMap::Grey, 0.0f)
                                                    .scaled(size, Qt::IgnoreAspectRatio, Qt::SmoothTransformation));
            if (reference.box[0] >= 0) {
                const double sx = size.width() / static_cast<double>(p.shape[1]);
                const double sy = size.height() / static_cast<double>(p.shape[0]);
                QPainter painter(&pixmap);
                painter.setPen(QPen(Qt::yellow, 2));
                painter.drawRect(QRectF(reference.box[0] * sx, reference.box[1] * sy,
                    (reference.box[2] - reference.box[0]) * sx, (reference.box[3] - reference.box[1]) * sy));
            }
            label->setPixmap(pixmap);
        } else {
            label->setText(QFileInfo(QString::fromStdString(reference.image)).fileName());
        }
        referenceRow_->insertWidget(referenceRow_->count() - 1, label);
        references_ << label;
    }
}

void RelevancePanel::placeMaps(bool beside)
{
    mapsBeside_ = beside;
    for (QWidget* w :
        std::initializer_list<QWidget*>{channelTitle_, wholeTitle_, channelMap_, channelBar_, wholeMap_, wholeBar_})
        maps_->removeWidget(w);
    const int row = beside ? 0 : 2, column = beside ? 2 : 0;
    maps_->addWidget(channelTitle_, 0, 0, 1, 2);
    maps_->addWidget(channelMap_, 1, 0);
    maps_->addWidget(channelBar_, 1, 1);
    maps_->addWidget(wholeTitle_, row, column, 1, 2);
    maps_->addWidget(wholeMap_, row + 1, column);
    maps_->addWidget(wholeBar_, row + 1, column + 1);
    maps_->setColumnStretch(4, 1);
}

bool RelevancePanel::eventFilter(QObject* watched, QEvent* event)
{
    if (event->type() == QEvent::Resize && watched == lowerScroll_->viewport()) {
        // Two maps with their colour bars side by side in the width there is, 130 to 320 pixels each;
        // one above the other where two of 130 do not fit.
        const int width = lowerScroll_->viewport()->width();
        const bool beside = (width - 2 * BarWidth - 40) / 2 >= 130;
        const int size
            = beside ? std::min((width - 2 * BarWidth - 40) / 2, 320) : std::clamp(width - BarWidth - 30, 120, 320);
        if (beside != mapsBeside_)
            placeMaps(beside);
        if (size != mapSize_) {
            mapSize_ = size;
            for (QLabel* map : {wholeMap_, channelMap_})
                map->setFixedSize(size, size);
            wholeBar_->setFixedSize(BarWidth, size);
            channelBar_->setFixedSize(BarWidth, size);
            redraw();
        }
    } else if (event->type() == QEvent::Resize && watched == bars_) {
        redraw();
    }
    return QWidget::eventFilter(watched, event);
}

QString RelevancePanel::exportTo(const QString& path, const QString& plot) const
{
    if (!result_)
        return tr("Nothing to export: explain the channels first.");
    if (plot == "bars")
        return savePlotFile(bars_, path, 800, 420);
    try {
        ExportManifest manifest = windowManifest("Relevance > Export", controller_->modelKey(), shown_.setup, {}, {});
        for (const auto& image : result_->images) {
            manifest.images.push_back({image.image});
            manifest.targets.push_back(image.targetDescription);
        }
        manifest.settings = {{"channels", shown_.channels.toString()}, {"composite", shown_.composite},
            {"attention_rule", shown_.attentionRule}};
        writeConceptRelevance(path.toStdString(), *result_, &manifest);
    } catch (const std::exception& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

} // namespace torchscope
