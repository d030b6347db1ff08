#include "patching_view.h"

#include "document.h"
#include "overlay_image.h"
#include "run_controller.h"

#include <QComboBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

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
{
    mode_->addItems({tr("Patch from B"), tr("Ablate channels")});
    channels_->setPlaceholderText(tr("channels to zero: 0,5,7"));
    channels_->setEnabled(false);
    layer_->setEditable(true);
    compare_->setEditable(true);
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

    connect(mode_, &QComboBox::currentIndexChanged, this, [this](int mode) {
        channels_->setEnabled(mode == 1);
        imageB_->setEnabled(mode == 0);
    });
    connect(run, &QPushButton::clicked, this, &PatchingView::compute);
    connect(document_, &Document::imagesChanged, this, &PatchingView::fillChoices);
    connect(document_, &Document::modelChanged, this, [this] {
        result_.reset();
        while (QLayoutItem* item = columns_->takeAt(0)) {
            delete item->widget();
            delete item;
        }
        header_->setText(tr("Patch a layer's output from image B into the run of image A, or zero channels of it."));
        layer_->clearEditText();
        compare_->clearEditText();
        channels_->clear();
        fillChoices();
    });
    connect(controller_, &RunController::patchFinished, this, &PatchingView::showResult);
    connect(controller_, &RunController::failed, this, [this](WorkerTask task, const QString&, const QString& text) {
        if (task == WorkerTask::Patch)
            header_->setText(text);
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
        if (!m.path.empty()) {
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
    request.ablate = mode_->currentIndex() == 1;
    request.compareLayer = compare_->currentText().toStdString();
    request.setup = document_->setup();
    if (request.ablate) {
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
    controller_->patch(request);
}

void PatchingView::showResult(const PatchSnapshotPtr& snapshot)
{
    result_ = snapshot;
    while (QLayoutItem* item = columns_->takeAt(0)) {
        delete item->widget();
        delete item;
    }
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
    header_->setText(snapshot->compareLayer.empty()
            ? tr("Edited: %1").arg(QString::fromStdString(snapshot->layer))
            : tr("Edited: %1; maps of %2 (mean over channels, one scale for all)")
                  .arg(QString::fromStdString(snapshot->layer), QString::fromStdString(snapshot->compareLayer)));
    Q_EMIT finished(snapshot);
}

} // namespace torchscope
