#include "views/patching_view.h"

#include "document/document.h"
#include "jobs/job_handle.h"
#include "jobs/run_controller.h"
#include "views/channel_grid.h"
#include "views/color_bar.h"
#include "views/layer_combo.h"
#include "views/overlay_image.h"

#include <QComboBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QVBoxLayout>

#include <array>

namespace torchscope {

PatchingView::PatchingView(Document* document, RunController* controller, QWidget* parent)
    : QWidget(parent)
    , document_(document)
    , controller_(controller)
    , imageA_(new QComboBox)
    , imageB_(new QComboBox)
    , layer_(new QComboBox)
    , mode_(new QComboBox)
    , channels_(new QLineEdit)
    , compare_(new QComboBox)
    , header_(new QLabel(tr("Patch a layer's output from image B into the run of image A, or zero channels of it.")))
    , columns_(new QHBoxLayout)
    , differenceBox_(new QWidget)
{
    mode_->addItems({tr("Patch from B"), tr("Ablate channels"), tr("Compare A and B at the layer")});
    channels_->setPlaceholderText(tr("channels to zero: 0,5,7"));
    channels_->setEnabled(false);
    makeLayerCombo(layer_);
    makeLayerCombo(compare_);
    compare_->setToolTip(tr("A later layer whose maps (mean over channels) are shown for each run"));
    header_->setWordWrap(true);
    auto* run = new QPushButton(tr("Run"));

    auto* form = new QFormLayout;
    form->addRow(tr("Image A:"), imageA_);
    form->addRow(tr("Image B:"), imageB_);
    form->addRow(tr("Layer:"), layer_);
    auto* modeRow = new QHBoxLayout;
    modeRow->addWidget(mode_);
    modeRow->addWidget(channels_, 1);
    form->addRow(tr("Edit:"), modeRow);
    form->addRow(tr("Show maps of:"), compare_);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(run);
    layout->addWidget(header_);
    layout->addLayout(columns_, 1);
    auto* differenceScroll = new QScrollArea;
    differenceScroll->setWidget(differenceBox_);
    differenceScroll->setWidgetResizable(true);
    differenceScroll->setFrameShape(QFrame::NoFrame);
    new QVBoxLayout(differenceBox_);
    layout->addWidget(differenceScroll, 2);

    connect(mode_, &QComboBox::currentIndexChanged, this, [this](int mode) {
        channels_->setEnabled(mode == 1);
        imageB_->setEnabled(mode != 1);
        compare_->setEnabled(mode != 2);
    });
    connect(run, &QPushButton::clicked, this, &PatchingView::compute);
    connect(document_, &Document::imagesChanged, this, &PatchingView::fillChoices);
    connect(document_, &Document::modelChanged, this, [this] {
        result_.reset();
        for (QLayout* layout : {static_cast<QLayout*>(columns_), differenceBox_->layout()})
            while (QLayoutItem* item = layout->takeAt(0)) {
                delete item->widget();
                delete item;
            }
        header_->setText(tr("Patch a layer's output from image B into the run of image A, or zero channels of it."));
        layer_->clearEditText();
        compare_->clearEditText();
        channels_->clear();
        fillChoices();
    });
}

void PatchingView::fillChoices()
{
    const int a = imageA_->currentIndex(), b = imageB_->currentIndex();
    imageA_->clear();
    imageB_->clear();
    for (const auto& path : document_->images()) {
        imageA_->addItem(QFileInfo(path).fileName(), path);
        imageB_->addItem(QFileInfo(path).fileName(), path);
    }
    imageA_->setCurrentIndex(std::max(0, std::min(a, imageA_->count() - 1)));
    imageB_->setCurrentIndex(b >= 0 ? std::min(b, imageB_->count() - 1) : std::min(1, imageB_->count() - 1));

    const QString layer = layer_->currentText(), compare = compare_->currentText();
    layer_->clear();
    compare_->clear();
    compare_->addItem(QString());
    for (const auto& m : document_->model().modules)
        if (!m.path.empty() && m.called) {
            layer_->addItem(QString::fromStdString(m.path));
            compare_->addItem(QString::fromStdString(m.path));
        }
    layer_->setCurrentText(document_->module(layer) ? layer : QString());
    compare_->setCurrentText(document_->module(compare) ? compare : QString());
}

void PatchingView::setup(
    int imageA, int imageB, const QString& layer, const QString& compareLayer, bool ablate, const QString& channels)
{
    fillChoices();
    imageA_->setCurrentIndex(imageA);
    imageB_->setCurrentIndex(imageB);
    layer_->setCurrentText(layer);
    compare_->setCurrentText(compareLayer);
    mode_->setCurrentIndex(ablate ? 1 : 0);
    channels_->setText(channels);
}

void PatchingView::setMode(Mode mode)
{
    mode_->setCurrentIndex(static_cast<int>(mode));
}

QList<ChannelGrid*> PatchingView::differenceGrids() const
{
    return differenceBox_->findChildren<ChannelGrid*>();
}

void PatchingView::showDifference(const InputDifference& d)
{
    // The most different channels first, at most 32: A and B on one scale, A − B on a symmetric one.
    const size_t shown = std::min<size_t>(32, d.ranked.size());
    const std::vector<int64_t> ranked(d.ranked.begin(), d.ranked.begin() + static_cast<std::ptrdiff_t>(shown));
    auto* layout = differenceBox_->layout();
    QStringList top;
    for (size_t i = 0; i < std::min<size_t>(8, shown); ++i)
        top << tr("%1 (%2)").arg(ranked[i]).arg(d.channelDifference[static_cast<size_t>(ranked[i])], 0, 'g', 3);
    auto* summary = new QLabel(tr("Channels ranked by mean |A − B|: %1. A and B share one scale (%2 … %3); "
                                  "A − B runs from −%4 (blue) to %4 (red).")
                                   .arg(top.join(", "))
                                   .arg(d.low, 0, 'g', 4)
                                   .arg(d.high, 0, 'g', 4)
                                   .arg(d.largest, 0, 'g', 4));
    summary->setWordWrap(true);
    layout->addWidget(summary);
    const std::array<std::pair<QString, const FloatTensor*>, 3> rows{
        {{tr("A"), &d.a}, {tr("B"), &d.b}, {tr("A − B"), &d.difference}}};
    for (const auto& [title, maps] : rows) {
        auto* grid = new ChannelGrid;
        auto* bar = new ColorBar;
        const FloatTensor picked = InputDifference::rankedChannels(*maps, ranked, shown);
        if (maps == &d.difference) {
            grid->setMaps(picked, -d.largest, d.largest, ColorMap::CoolWarm);
            bar->setScale(-d.largest, d.largest, ColorMap::CoolWarm, title);
        } else {
            grid->setMaps(picked, d.low, d.high, ColorMap::Viridis);
            bar->setScale(d.low, d.high, ColorMap::Viridis, tr("A and B"));
        }
        grid->setChannelNumbers(ranked);
        grid->setToolTip(title);
        bar->setMinimumHeight(120);
        auto* row = new QWidget;
        auto* rowLayout = new QHBoxLayout(row);
        rowLayout->setContentsMargins(0, 0, 0, 0);
        rowLayout->addWidget(grid, 1);
        rowLayout->addWidget(bar);
        layout->addWidget(new QLabel("<b>" + title + "</b>"));
        layout->addWidget(row);
    }
}

void PatchingView::compute()
{
    if (imageA_->currentIndex() < 0) {
        header_->setText(tr("Drop images on the window first."));
        return;
    }
    PatchRequest request;
    request.imageA = imageA_->currentData().toString().toStdString();
    request.imageB = imageB_->currentData().toString().toStdString();
    request.layer = layer_->currentText().toStdString();
    request.mode = mode_->currentIndex() == 1 ? PatchMode::Ablate
        : mode_->currentIndex() == 2          ? PatchMode::Difference
                                              : PatchMode::Patch;
    request.compareLayer
        = request.mode == PatchMode::Difference ? std::string() : compare_->currentText().toStdString();
    request.edits = document_->edits(); // the module tree's zero and scale edits hold in every run
    request.setup = document_->setup();
    if (request.mode == PatchMode::Ablate) {
        for (const auto& part : channels_->text().split(',', Qt::SkipEmptyParts)) {
            bool ok = false;
            const int channel = part.trimmed().toInt(&ok);
            if (!ok) {
                Q_EMIT failed(tr("Error Ablating"), tr("'%1' is not a channel number").arg(part.trimmed()));
                return;
            }
            request.channels.push_back(channel);
        }
    }
    header_->setText(tr("Running…"));
    JobHandle* job = controller_->start<PatchAnalysis>(request, this); // supersedes the one before
    connect(job, &JobHandle::succeeded, this, [this, job] { showResult(job->result<PatchResult>()); });
    connect(job, &JobHandle::failed, this, [this](const QString&, const QString& text) { header_->setText(text); });
}

void PatchingView::showResult(const PatchResultPtr& snapshot)
{
    result_ = snapshot;
    for (QLayout* layout : {static_cast<QLayout*>(columns_), differenceBox_->layout()})
        while (QLayoutItem* item = layout->takeAt(0)) {
            delete item->widget();
            delete item;
        }
    if (snapshot->difference)
        showDifference(*snapshot->difference);
    for (const auto& column : snapshot->columns) {
        auto* box = new QWidget;
        auto* v = new QVBoxLayout(box);
        auto* title = new QLabel("<b>" + QString::fromStdString(column.title).toHtmlEscaped() + "</b>");
        auto* picture = new QLabel;
        const bool hasMap = column.map.shape.size() == 2;
        const QImage image = overlayImage(column.picture, hasMap ? column.map.values.data() : nullptr,
            hasMap ? column.map.shape[1] : 0, hasMap ? column.map.shape[0] : 0, ColorMap::Viridis, hasMap ? 0.6f : 0.f);
        picture->setPixmap(QPixmap::fromImage(image.scaled(220, 220, Qt::KeepAspectRatio, Qt::FastTransformation)));
        QStringList lines;
        for (const auto& p : column.predictions)
            lines << QString("%1  %2%").arg(QString::fromStdString(p.label)).arg(100.0 * p.probability, 0, 'f', 1);
        auto* predictions = new QLabel(lines.join("\n"));
        v->addWidget(title);
        v->addWidget(picture);
        v->addWidget(predictions);
        v->addStretch();
        columns_->addWidget(box);
    }
    if (!snapshot->compareLayer.empty() && !snapshot->difference) { // the maps' one scale, beside them
        auto* bar = new ColorBar;
        bar->setScale(snapshot->mapLow, snapshot->mapHigh, ColorMap::Viridis,
            tr("mean of %1").arg(QString::fromStdString(snapshot->compareLayer)));
        columns_->addWidget(bar);
    }
    const QString edits = document_->edits().empty()
        ? QString()
        : tr(" — with the module tree's %n edit(s) in every run", "", int(document_->edits().size()));
    if (snapshot->difference)
        header_->setText(tr("A and B at %1").arg(QString::fromStdString(snapshot->layer)) + edits);
    else
        header_->setText(snapshot->compareLayer.empty()
                ? tr("Edited: %1").arg(QString::fromStdString(snapshot->layer))
                : tr("Edited: %1; maps of %2 (mean over channels, one scale for all)")
                        .arg(QString::fromStdString(snapshot->layer), QString::fromStdString(snapshot->compareLayer))
                    + edits);
    Q_EMIT finished(snapshot);
}

} // namespace torchscope
