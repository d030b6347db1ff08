#include "panels/attention_panel.h"

#include "attention/attention_names.h"
#include "common/memory_budget.h"
#include "dialogs/save_dialog.h"
#include "document/document.h"
#include "export/manifest.h"
#include "jobs/run_controller.h"
#include "jobs/workbench_jobs.h"
#include "panels/job_setup_column.h"
#include "panels/setup_and_results.h"
#include "views/attention_head_grid.h"
#include "views/attention_plots.h"
#include "views/color_bar.h"
#include "views/overlay_image.h"
#include "views/plot_file.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QGridLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMouseEvent>
#include <QPainter>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSpinBox>
#include <QSplitter>
#include <QVBoxLayout>

#include <algorithm>

namespace torchscope {
namespace {

constexpr int EnlargedSize = 300;
constexpr int WholeImageMapSize = 140;
constexpr int SideWidth = 420;

std::pair<double, double> rangeOf(const FloatTensor& map)
{
    if (map.values.empty())
        return {0.0, 0.0};
    const auto [low, high] = std::minmax_element(map.values.begin(), map.values.end());
    return {*low, *high};
}

// The map over the picture in magma, square, `size` pixels.
QPixmap overlayPixmap(const FloatTensor& picture, const FloatTensor& map, double low, double high, int size)
{
    const std::vector<float> unit = scaledToUnit(map, low, high);
    const QImage image = overlayImage(picture, unit.data(), map.shape[1], map.shape[0], ColorMap::Magma, 0.7f);
    return QPixmap::fromImage(image.scaled(size, size, Qt::IgnoreAspectRatio, Qt::SmoothTransformation));
}

QString layerName(const std::string& path)
{
    return QString::fromStdString(path.empty() ? "(root)" : path);
}

} // namespace

AttentionPanel::AttentionPanel(Document* document, RunController* controller, QWidget* parent)
    : QWidget(parent)
    , document_(document)
    , controller_(controller)
    , column_(new JobSetupColumn)
    , layers_(new QLineEdit)
    , fusion_(new QComboBox)
    , discard_(new QDoubleSpinBox)
    , legrad_(new QCheckBox(tr("LeGrad (a backward pass)")))
    , target_(new QSpinBox)
    , start_(new QPushButton(tr("Show the Attention")))
    , image_(new QComboBox)
    , grid_(new AttentionHeadGrid)
    , enlarged_(new QLabel)
    , enlargedBar_(new ColorBar)
    , caption_(new QLabel)
    , classToken_(new QPushButton(tr("Query: the class token")))
    , rollout_(new QLabel)
    , rolloutBar_(new ColorBar)
    , legradMap_(new QLabel)
    , legradBar_(new ColorBar)
    , plots_(new AttentionPlots)
{
    buildForm();
    column_->addStartButton(start_);
    buildExportMenu();
    layOutSetupAndResults(this, column_, buildResults());
    connectJobs();
    resetForModel();
}

void AttentionPanel::buildForm()
{
    layers_->setPlaceholderText(tr("every attention module"));
    layers_->setToolTip(tr("A module path, glob or type:NAME; the module tree marks the modules that compute "
                           "attention (◎)"));
    for (const auto& fusion : headFusions()) // the CLI's --head-fusion choices
        fusion_->addItem(QString::fromStdString(fusion));
    fusion_->setToolTip(tr("Rollout: how each layer's heads become one matrix"));
    discard_->setRange(0.0, 0.99);
    discard_->setSingleStep(0.05);
    discard_->setValue(0.0);
    discard_->setToolTip(tr("Rollout: the fraction of each layer's lowest attention set to 0"));
    legrad_->setChecked(true);
    target_->setRange(-1, 1000000);
    target_->setSpecialValueText(tr("each image's prediction"));
    target_->setValue(-1);
    target_->setToolTip(tr("LeGrad's class"));
    QFormLayout* form = column_->form();
    form->addRow(tr("Layers:"), layers_);
    form->addRow(tr("Head fusion:"), fusion_);
    form->addRow(tr("Discard:"), discard_);
    form->addRow(QString(), legrad_);
    form->addRow(tr("LeGrad class:"), target_);
    auto* imageRow = new QFormLayout;
    imageRow->addRow(tr("Image shown:"), image_);
    column_->addBelow(imageRow);
}

QWidget* AttentionPanel::buildResults()
{
    // Left: the grid, as large as the tab lets it be. Right: the picked head enlarged, its caption,
    // rollout and LeGrad. Below both: the per-head figures.
    enlarged_->setFixedSize(EnlargedSize, EnlargedSize);
    enlarged_->setAlignment(Qt::AlignCenter);
    enlarged_->setCursor(Qt::CrossCursor);
    enlarged_->setToolTip(tr("Click a patch to make it the query of every map"));
    enlarged_->installEventFilter(this);
    enlargedBar_->setFixedSize(90, EnlargedSize);
    caption_->setWordWrap(true);
    caption_->setFixedWidth(SideWidth);
    auto* enlargedRow = new QHBoxLayout;
    enlargedRow->addWidget(enlarged_);
    enlargedRow->addWidget(enlargedBar_);
    enlargedRow->addStretch(1);

    auto* wholeImage = new QGridLayout;
    wholeImage->addWidget(new QLabel(tr("<b>Attention rollout</b>")), 0, 0, 1, 2);
    wholeImage->addWidget(new QLabel(tr("<b>LeGrad</b>")), 0, 2, 1, 2);
    for (QLabel* map : {rollout_, legradMap_}) {
        map->setFixedSize(WholeImageMapSize, WholeImageMapSize);
        map->setAlignment(Qt::AlignCenter);
    }
    for (ColorBar* bar : {rolloutBar_, legradBar_})
        bar->setFixedSize(76, WholeImageMapSize);
    wholeImage->addWidget(rollout_, 1, 0);
    wholeImage->addWidget(rolloutBar_, 1, 1);
    wholeImage->addWidget(legradMap_, 1, 2);
    wholeImage->addWidget(legradBar_, 1, 3);
    wholeImage->setColumnStretch(4, 1);

    // The side column scrolls when the tab is short (a 1280 x 800 screen): its maps would otherwise
    // set the window's least height.
    auto* side = new QWidget;
    auto* sideColumn = new QVBoxLayout(side);
    sideColumn->setContentsMargins(4, 0, 4, 0);
    sideColumn->addLayout(enlargedRow);
    sideColumn->addWidget(caption_);
    sideColumn->addWidget(classToken_, 0, Qt::AlignLeft);
    sideColumn->addLayout(wholeImage);
    sideColumn->addStretch(1);

    auto* sideScroll = new QScrollArea;
    sideScroll->setWidget(side);
    sideScroll->setWidgetResizable(true);
    sideScroll->setFrameShape(QFrame::NoFrame);
    // Whole where the tab is wide; on a 1280-pixel screen it gives way (scrolling sideways) so that
    // the tab does not push the window's docks to 130 pixels: its fixed 460 made the tab need 964.
    const int whole = SideWidth + 20 + sideScroll->verticalScrollBar()->sizeHint().width();
    sideScroll->setMaximumWidth(whole);
    sideScroll->setMinimumWidth(whole / 2);
    grid_->setMinimumWidth(200); // the heads stay thumbnails, not 16-pixel dots, when the tab is narrow
    auto* top = new QWidget;
    auto* topRow = new QHBoxLayout(top);
    topRow->setContentsMargins(0, 0, 0, 0);
    topRow->addWidget(grid_, 1);
    topRow->addWidget(sideScroll);
    auto* results = new QSplitter(Qt::Vertical);
    results->addWidget(top);
    results->addWidget(plots_);
    results->setStretchFactor(0, 3);
    results->setStretchFactor(1, 1);
    results->setChildrenCollapsible(false);
    return results;
}

void AttentionPanel::buildExportMenu()
{
    const QString pictures = tr("PNG image (*.png);;PDF (*.pdf)");
    column_->addExportMenu(
        {
            {tr("Attention as .npz, .pt or .safetensors…"), tr("Export Attention"), "attention.npz",
                tr("NumPy (*.npz);;PyTorch (*.pt);;safetensors (*.safetensors)"), QString()},
            {tr("Distance Plot as PNG or PDF…"), tr("Export Distance Plot"), "attention_distance.png", pictures,
                "distance"},
            {tr("Entropy Plot as PNG or PDF…"), tr("Export Entropy Plot"), "attention_entropy.png", pictures,
                "entropy"},
        },
        [this](const QString& path, const QString& plot) { return exportTo(path, plot); });
    connect(column_, &JobSetupColumn::exportFailed, this, &AttentionPanel::failed);
}

void AttentionPanel::connectJobs()
{
    connect(start_, &QPushButton::clicked, this, &AttentionPanel::start);
    connect(grid_, &AttentionHeadGrid::cellClicked, this, &AttentionPanel::pick);
    connect(classToken_, &QPushButton::clicked, this, [this] { setQuery(-1); });
    connect(image_, &QComboBox::currentIndexChanged, this, [this] { redraw(); });
    connect(document_, &Document::modelChanged, this, &AttentionPanel::resetForModel);
    column_->watchInputs(document_, ImagesInput | SetupInput);
}

void AttentionPanel::resetForModel()
{
    column_->cancelJob();
    result_.reset();
    layer_ = head_ = 0;
    query_ = -1;
    image_->clear();
    plots_->clear();
    for (QLabel* map : {enlarged_, rollout_, legradMap_})
        map->clear();
    for (ColorBar* bar : {enlargedBar_, rolloutBar_, legradBar_})
        bar->clearScale();
    caption_->clear();
    const auto& modules = document_->model().modules;
    const auto attending = std::count_if(
        modules.begin(), modules.end(), [](const ModuleInfo& m) { return m.holdsAttention && m.called; });
    QString text;
    if (document_->modelPath().isEmpty())
        text = tr("Open a vision transformer and add images to see where its heads look.");
    else if (attending == 0)
        text = tr("This model computes no attention TorchScope recognises (scaled_dot_product_attention, "
                  "nn.MultiheadAttention, softmax over q·kᵀ).");
    else if (document_->images().isEmpty())
        text = tr("%n attention module(s) found (◎ in the module tree). Add images, then Show the Attention.", nullptr,
            static_cast<int>(attending));
    else
        text = tr("%n attention module(s) found (◎ in the module tree). Show the Attention runs the strip's images.",
            nullptr, static_cast<int>(attending));
    grid_->clear(text);
    column_->reset(text);
    // A model with nothing to show (a CNN) cannot start the job: the hint above says why.
    start_->setEnabled(attending > 0);
    start_->setToolTip(
        attending > 0 ? tr("Runs the strip's images and shows every head of every attention module") : text);
}

void AttentionPanel::start()
{
    QString problem;
    if (document_->modelPath().isEmpty())
        problem = tr("Open a model first.");
    else if (document_->images().isEmpty())
        problem = tr("Add images to the window (drop them on the strip) to see their attention.");
    if (!problem.isEmpty()) {
        column_->summary()->setText(problem);
        return;
    }
    AttentionWorkbenchRequest request;
    request.memoryBytes = defaultMemoryBudget(); // as the CLI's default --memory-mb
    for (const auto& image : document_->images())
        request.images.push_back(image.toStdString());
    request.setup = document_->setup();
    if (!layers_->text().trimmed().isEmpty())
        request.layers = {layers_->text().trimmed().toStdString()};
    request.headFusion = fusion_->currentText().toStdString();
    request.discard = discard_->value();
    request.legrad = legrad_->isChecked();
    request.target = target_->value();
    shown_ = request;
    JobHandle* job = controller_->start<AttentionAnalysis>(request, this);
    connect(job, &JobHandle::succeeded, this, [this, job] { showResult(job->result<AttentionWorkbenchResult>()); });
    connect(job, &JobHandle::failed, this,
        [this] { grid_->clear(tr("The attention maps failed: the reason is on the left and in the log.")); });
    result_.reset();
    grid_->clear(tr("Running %n image(s)… the maps appear here when the job ends.", nullptr,
        static_cast<int>(request.images.size())));
    column_->exportButton()->setEnabled(false);
    column_->follow(job, tr("Running %n image(s)…", nullptr, static_cast<int>(request.images.size())));
}

void AttentionPanel::showResult(const AttentionWorkbenchResultPtr& result)
{
    result_ = result;
    column_->finish(result->cancelled);
    column_->exportButton()->setEnabled(true);
    {
        const QSignalBlocker block(image_);
        image_->clear();
        for (const auto& image : result->images)
            image_->addItem(QFileInfo(QString::fromStdString(image.image)).fileName());
    }
    layer_ = std::min<int>(layer_, static_cast<int>(result->layers.size()) - 1);
    head_ = std::min<int>(head_, static_cast<int>(result->heads) - 1);
    query_ = -1;
    plots_->setResult(result);
    QStringList lines;
    lines << tr("%n image(s), %1 layer(s) × %2 head(s), %3 tokens", nullptr, static_cast<int>(result->images.size()))
                 .arg(result->layers.size())
                 .arg(result->heads)
                 .arg(result->tokens);
    if (result->spatial)
        lines << tr("%1 before a %2 × %3 grid of %4-pixel patches")
                     .arg(result->prefix)
                     .arg(result->gridHeight)
                     .arg(result->gridWidth)
                     .arg(result->patchSize);
    for (const auto& note : result->notes)
        lines << QString::fromStdString(note);
    if (result->cancelled)
        lines << tr("Cancelled: what finished is shown.");
    for (const auto& [image, why] : result->failures)
        lines << tr("Left out %1: %2").arg(QString::fromStdString(image), QString::fromStdString(why));
    column_->summary()->setText(lines.join('\n'));
    redraw();
    Q_EMIT finished(result);
}

void AttentionPanel::pick(int layer, int head)
{
    layer_ = layer;
    head_ = head;
    grid_->setPicked(layer, head);
    plots_->setPicked(layer, head);
    drawEnlarged(image_->currentIndex());
}

void AttentionPanel::setQuery(int token)
{
    query_ = token;
    redraw();
}

void AttentionPanel::redraw()
{
    const int image = image_->currentIndex();
    if (!result_ || image < 0 || result_->layers.empty())
        return;
    if (!result_->spatial) {
        grid_->clear(tr("These keys are not the image's patch grid (windowed attention, as Swin's): the "
                        "probabilities and each head's entropy are there to export, the maps are not."));
        drawWholeImageMaps(image);
        return;
    }
    std::vector<std::vector<FloatTensor>> maps;
    QStringList names;
    for (size_t l = 0; l < result_->layers.size(); ++l) {
        std::vector<FloatTensor> heads;
        for (int64_t h = 0; h < result_->heads; ++h)
            heads.push_back(attentionHeadMap(*result_, l, image, h, query_));
        maps.push_back(std::move(heads));
        names << QString("L%1").arg(l);
    }
    grid_->setMaps(maps, names);
    grid_->setToolTip(tr("Rows: %1 … %2; each map on its own scale. Click a map to enlarge it.")
                          .arg(layerName(result_->layers.front().layer), layerName(result_->layers.back().layer)));
    pick(layer_, head_);
    drawWholeImageMaps(image);
}

void AttentionPanel::drawEnlarged(int image)
{
    if (!result_ || !result_->spatial || image < 0 || layer_ < 0 || head_ < 0)
        return;
    const FloatTensor map = attentionHeadMap(*result_, static_cast<size_t>(layer_), image, head_, query_);
    const auto [low, high] = rangeOf(map);
    const auto& picture = result_->images[static_cast<size_t>(image)].picture;
    QPixmap pixmap = overlayPixmap(picture, map, low, high, EnlargedSize);
    if (query_ >= result_->prefix) { // the query patch, outlined
        const int64_t patch = query_ - result_->prefix;
        const double w = EnlargedSize / static_cast<double>(result_->gridWidth);
        const double h = EnlargedSize / static_cast<double>(result_->gridHeight);
        QPainter painter(&pixmap);
        painter.setPen(QPen(Qt::cyan, 2));
        painter.drawRect(QRectF(static_cast<double>(patch % result_->gridWidth) * w,
            static_cast<double>(patch / result_->gridWidth) * h, w, h));
    }
    enlarged_->setPixmap(pixmap);
    enlargedBar_->setScale(low, high, ColorMap::Magma, tr("probability"));
    const QString query = query_ < 0
        ? (result_->prefix > 0 ? tr("the class token") : tr("the mean over the patches (no class token)"))
        : query_ < result_->prefix ? tr("token %1").arg(query_)
                                   : tr("patch (%1, %2)")
                                         .arg((query_ - result_->prefix) / result_->gridWidth)
                                         .arg((query_ - result_->prefix) % result_->gridWidth);
    const auto& layer = result_->layers[static_cast<size_t>(layer_)];
    QString text = tr("<b>%1</b>, head %2: the attention of %3 over the patches.")
                       .arg(layerName(layer.layer))
                       .arg(head_)
                       .arg(query);
    if (!layer.distance.empty())
        text += tr(" This image: mean distance %1 px, entropy %2 nats.")
                    .arg(layer.distance[static_cast<size_t>(image)][static_cast<size_t>(head_)], 0, 'f', 1)
                    .arg(layer.entropy[static_cast<size_t>(image)][static_cast<size_t>(head_)], 0, 'f', 2);
    caption_->setText(text);
    classToken_->setEnabled(query_ >= 0);
}

void AttentionPanel::drawWholeImageMaps(int image)
{
    const auto& shown = result_->images[static_cast<size_t>(image)];
    const auto draw = [&](QLabel* label, ColorBar* bar, const FloatTensor& map, const QString& title) {
        if (map.empty()) {
            label->setText(tr("—"));
            bar->clearScale();
            return;
        }
        const auto [low, high] = rangeOf(map);
        label->setPixmap(overlayPixmap(shown.picture, map, low, high, WholeImageMapSize));
        bar->setScale(low, high, ColorMap::Magma, title);
    };
    draw(rollout_, rolloutBar_, shown.rollout, tr("rollout"));
    draw(legradMap_, legradBar_, shown.legrad, shown.target >= 0 ? tr("class %1").arg(shown.target) : tr("LeGrad"));
}

bool AttentionPanel::eventFilter(QObject* watched, QEvent* event)
{
    if (watched == enlarged_ && event->type() == QEvent::MouseButtonPress && result_) {
        const auto* click = static_cast<QMouseEvent*>(event);
        const int64_t token = patchToken(
            *result_, click->position().x() / enlarged_->width(), click->position().y() / enlarged_->height());
        if (token >= 0)
            setQuery(static_cast<int>(token));
        return true;
    }
    return QWidget::eventFilter(watched, event);
}

QString AttentionPanel::exportTo(const QString& path, const QString& plot) const
{
    if (!result_)
        return tr("Nothing to export: show the attention first.");
    if (plot == "distance")
        return savePlotFile(plots_->distancePlot(), path, 800, 480);
    if (plot == "entropy")
        return savePlotFile(plots_->entropyPlot(), path, 800, 480);
    try {
        ExportManifest manifest = windowManifest("Attention > Export", controller_->modelKey(), shown_.setup, {}, {});
        for (const auto& image : result_->images)
            manifest.images.push_back({image.image});
        manifest.settings = {{"head_fusion", shown_.headFusion}, {"discard", std::to_string(shown_.discard)},
            {"patch_size", std::to_string(result_->patchSize)}, {"prefix_tokens", std::to_string(result_->prefix)}};
        writeAttentionMaps(path.toStdString(), *result_, &manifest);
    } catch (const std::exception& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

} // namespace torchscope
