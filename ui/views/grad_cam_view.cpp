#include "views/grad_cam_view.h"

#include "dialogs/save_dialog.h"
#include "document/capture_keys.h"
#include "document/document.h"
#include "jobs/job_handle.h"
#include "jobs/run_controller.h"
#include "views/color_bar.h"
#include "views/figure_image.h"
#include "views/layer_combo.h"
#include "views/overlay_image.h"

#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QPushButton>
#include <QRubberBand>
#include <QSaveFile>
#include <QSlider>
#include <QSpinBox>
#include <QToolBar>
#include <QVBoxLayout>

#include <algorithm>

namespace torchscope {

GradCamView::GradCamView(Document* document, RunController* controller, QWidget* parent)
    : QWidget(parent)
    , document_(document)
    , controller_(controller)
    , layer_(new QComboBox)
    , mode_(new QComboBox)
    , target_(new QSpinBox)
    , alpha_(new QSlider(Qt::Horizontal))
    , header_(new QLabel(tr("Pick an image and a layer with spatial maps, then Compute.")))
    , picture_(new QLabel)
    , colorBar_(new ColorBar)
    , clearRegion_(new QPushButton(tr("Clear Region")))
    , band_(nullptr)
{
    makeLayerCombo(layer_);
    layer_->setToolTip(tr("The layer whose output Grad-CAM weighs by the gradient"));
    layer_->setMinimumContentsLength(16);
    mode_->addItems({tr("Grad-CAM"), tr("Saliency (input gradient)")});
    target_->setRange(-1, 1000000);
    target_->setSpecialValueText(tr("predicted class"));
    target_->setValue(-1);
    target_->setToolTip(tr("The class whose score is explained"));
    alpha_->setRange(0, 100);
    alpha_->setValue(55);
    alpha_->setMaximumWidth(120);
    auto* computeButton = new QPushButton(tr("Compute"));
    auto* exportButton = new QPushButton(tr("Export PNG…"));
    picture_->setAlignment(Qt::AlignCenter);
    picture_->setMinimumSize(200, 200);
    picture_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Ignored);
    header_->setWordWrap(true);

    // A tool bar: in a narrow window what does not fit goes behind its » button.
    auto* controls = new QToolBar;
    controls->addWidget(new QLabel(tr("Layer: ")));
    controls->addWidget(layer_);
    controls->addWidget(new QLabel(tr(" Class: ")));
    controls->addWidget(target_);
    controls->addWidget(mode_);
    controls->addWidget(computeButton);
    controls->addSeparator();
    controls->addWidget(new QLabel(tr("Opacity: ")));
    controls->addWidget(alpha_);
    clearRegionAction_ = controls->addWidget(clearRegion_);
    clearRegionAction_->setVisible(false);
    controls->addWidget(exportButton);
    clearRegion_->setToolTip(tr("Segmentation: explain the class over its own pixels again"));
    band_ = new QRubberBand(QRubberBand::Rectangle, picture_);
    picture_->installEventFilter(this);
    connect(clearRegion_, &QPushButton::clicked, this, [this] { setRegion({}); });
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(controls);
    layout->addWidget(header_);
    auto* pictureRow = new QHBoxLayout;
    pictureRow->addWidget(picture_, 1);
    pictureRow->addWidget(colorBar_);
    layout->addLayout(pictureRow, 1);

    connect(computeButton, &QPushButton::clicked, this, &GradCamView::compute);
    connect(mode_, &QComboBox::currentIndexChanged, this, &GradCamView::redraw);
    connect(alpha_, &QSlider::valueChanged, this, &GradCamView::redraw);
    connect(exportButton, &QPushButton::clicked, this, [this] {
        const QString path = askSavePath(this, tr("Export Attribution"), "gradcam.png", tr("PNG image (*.png)"));
        if (path.isEmpty())
            return;
        if (const QString error = savePng(path); !error.isEmpty())
            Q_EMIT failed(tr("Error Exporting"), error);
    });
    connect(document_, &Document::modelChanged, this, [this] {
        // Nothing of the old model's explanation stays: layer, class, region and picture.
        result_.reset();
        image_ = QImage();
        picture_->clear();
        colorBar_->clearScale();
        region_.clear();
        target_->setValue(-1);
        layer_->clearEditText();
        header_->setText(tr("Pick an image and a layer with spatial maps, then Compute."));
        fillLayers();
    });
    connect(document_, &Document::modulesChanged, this, &GradCamView::fillLayers);
    connect(document_, &Document::selectionChanged, this, [this] {
        if (isVisible() && result_)
            compute();
    });
}

void GradCamView::fillLayers()
{
    const QString current = layer_->currentText();
    const QSignalBlocker block(layer_);
    layer_->clear();
    // Modules with 4-D outputs (after a dry run), else every module.
    for (const auto& m : document_->model().modules) {
        if (m.path.empty() || !m.called)
            continue;
        const bool spatial = !m.outputShapes.empty() && m.outputShapes.front().size() == 4;
        if (spatial || m.outputShapes.empty())
            layer_->addItem(QString::fromStdString(m.path));
    }
    // Adding items selects the first: keep what was chosen, or nothing.
    if (!current.isEmpty() && document_->module(current))
        layer_->setCurrentText(current);
    else
        layer_->setCurrentIndex(-1);
}

void GradCamView::setLayer(const QString& layer)
{
    layer_->setCurrentText(layer);
}

QString GradCamView::layer() const
{
    return layer_->currentText();
}

void GradCamView::setShowSaliency(bool saliency)
{
    mode_->setCurrentIndex(saliency ? 1 : 0);
}

void GradCamView::showEvent(QShowEvent* event)
{
    QWidget::showEvent(event);
    if (layer_->currentText().isEmpty()) {
        if (const QString layer = outputModule(document_->selectedKey()); !layer.isEmpty())
            layer_->setCurrentText(layer);
    }
}

void GradCamView::compute()
{
    const QStringList images = document_->images();
    const int index = document_->selectedImage();
    if (images.isEmpty() || index < 0 || index >= images.size()) {
        header_->setText(tr("Drop an image on the window and select it."));
        return;
    }
    GradCamRequest request;
    request.images = {images[index].toStdString()};
    request.layer = layer_->currentText().toStdString();
    request.targetClass = target_->value();
    if (region_.size() == 4)
        request.region = std::array<int64_t, 4>{region_[0], region_[1], region_[2], region_[3]};
    request.setup = document_->setup();
    // Grad-CAM needs the score, so it runs the whole model whatever the tree's truncation says.
    ranFullModel_ = !document_->truncation().isEmpty();
    header_->setText(tr("Computing…"));
    JobHandle* job = controller_->start<GradCamAnalysis>(request, this); // supersedes the one before
    connect(job, &JobHandle::succeeded, this, [this, job] {
        result_ = job->result<GradCamResult>();
        redraw();
        Q_EMIT finished(result_);
    });
    connect(job, &JobHandle::failed, this, [this](const QString&, const QString& text) { header_->setText(text); });
}

void GradCamView::redraw()
{
    if (!result_)
        return;
    const bool saliency = mode_->currentIndex() == 1;
    const GradCamImage& shown = result_->images.front();
    const FloatTensor& map = saliency ? shown.saliency : shown.gradCam;
    if (map.shape.size() != 2)
        return;
    const auto [low, high] = saliency ? shown.saliencyRange : shown.gradCamRange;
    const std::vector<float> scaled = scaledToUnit(map, low, high);
    const ColorMap colors = saliency ? ColorMap::Magma : ColorMap::Viridis;
    image_ = overlayImage(shown.picture, scaled.data(), map.shape[1], map.shape[0], colors, alpha_->value() / 100.f);
    colorBar_->setScale(low, high, colors, saliency ? tr("|∂ score / ∂ input|") : tr("Grad-CAM"));
    const QString what = saliency ? tr("Saliency (|∂ score / ∂ input|)")
                                  : tr("Grad-CAM of %1").arg(QString::fromStdString(result_->layer));
    QString header = tr("%1 for %2 on %3")
                         .arg(what, QString::fromStdString(shown.targetDescription),
                             QFileInfo(QString::fromStdString(shown.image)).fileName());
    if (result_->outputKind == OutputKind::Segmentation && region_.empty())
        header += tr(" — drag over the picture to explain the class over a region instead");
    if (!saliency && !shown.note.empty())
        header += tr(" — %1").arg(QString::fromStdString(shown.note));
    if (ranFullModel_)
        header += tr(" — ran the whole model: the truncation at %1 is not applied, Grad-CAM needs the score")
                      .arg(document_->truncation());
    header_->setText(header);
    figureTitle_ = tr("%1 for %2 — %3 — %4")
                       .arg(what, QString::fromStdString(shown.targetDescription),
                           QFileInfo(QString::fromStdString(shown.image)).fileName(),
                           QFileInfo(document_->modelPath()).fileName());
    target_->setSpecialValueText(
        result_->outputKind == OutputKind::Detection ? tr("top detection") : tr("predicted class"));
    target_->setToolTip(result_->outputKind == OutputKind::Detection
            ? tr("The detection whose score is explained (0: the highest score)")
            : tr("The class whose score is explained"));
    clearRegionAction_->setVisible(!region_.empty());
    if (!region_.empty()) {
        QPainter painter(&image_);
        painter.setPen(QPen(Qt::white, 1, Qt::DashLine));
        painter.drawRect(
            QRect(QPoint(int(region_[0]), int(region_[1])), QPoint(int(region_[2]) - 1, int(region_[3]) - 1)));
    }
    const QSize room = picture_->size().expandedTo(QSize(200, 200));
    picture_->setPixmap(QPixmap::fromImage(image_.scaled(room, Qt::KeepAspectRatio, Qt::SmoothTransformation)));
}

void GradCamView::setRegion(const QRect& box)
{
    region_.clear();
    if (!box.isEmpty())
        region_ = {box.left(), box.top(), box.right() + 1, box.bottom() + 1};
    clearRegionAction_->setVisible(!region_.empty());
    if (result_)
        compute();
}

QRect GradCamView::region() const
{
    return region_.empty()
        ? QRect()
        : QRect(QPoint(int(region_[0]), int(region_[1])), QPoint(int(region_[2]) - 1, int(region_[3]) - 1));
}

QPoint GradCamView::toImage(const QPoint& position) const
{
    if (image_.isNull())
        return {};
    // The pixmap is the image scaled to fit, centred in the label.
    const QSize shown = image_.size().scaled(picture_->size(), Qt::KeepAspectRatio);
    const QPoint offset((picture_->width() - shown.width()) / 2, (picture_->height() - shown.height()) / 2);
    const double scale = double(image_.width()) / std::max(1, shown.width());
    return QPoint(std::clamp(int((position.x() - offset.x()) * scale), 0, image_.width()),
        std::clamp(int((position.y() - offset.y()) * scale), 0, image_.height()));
}

bool GradCamView::eventFilter(QObject* watched, QEvent* event)
{
    if (watched != picture_ || !result_ || result_->outputKind != OutputKind::Segmentation)
        return QWidget::eventFilter(watched, event);
    if (event->type() == QEvent::MouseButtonPress) {
        dragStart_ = static_cast<QMouseEvent*>(event)->pos();
        band_->setGeometry(QRect(dragStart_, QSize()));
        band_->show();
        return true;
    }
    if (event->type() == QEvent::MouseMove && band_->isVisible()) {
        band_->setGeometry(QRect(dragStart_, static_cast<QMouseEvent*>(event)->pos()).normalized());
        return true;
    }
    if (event->type() == QEvent::MouseButtonRelease && band_->isVisible()) {
        band_->hide();
        const QRect box = QRect(toImage(dragStart_), toImage(static_cast<QMouseEvent*>(event)->pos())).normalized();
        if (box.width() >= 2 && box.height() >= 2)
            setRegion(box);
        return true;
    }
    return QWidget::eventFilter(watched, event);
}

QString GradCamView::savePng(const QString& path) const
{
    if (image_.isNull())
        return tr("nothing to export: compute Grad-CAM or saliency first");
    // Pixels enlarged whole (a 28 × 28 input stays readable), with the colour bar beside them.
    const int scale = std::max(
        1, (256 + std::min(image_.width(), image_.height()) - 1) / std::min(image_.width(), image_.height()));
    const QImage picture = image_.scaled(image_.size() * scale, Qt::IgnoreAspectRatio, Qt::FastTransformation);
    const QImage exported = figureImage(figureTitle_, picture, *colorBar_); // title, map, scale
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) || !exported.save(&file, "PNG") || !file.commit())
        return tr("could not write %1: %2").arg(path, file.errorString());
    return {};
}

} // namespace torchscope
