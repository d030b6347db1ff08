#include "views/activation_view.h"

#include "common/strings.h"
#include "document/capture_keys.h"
#include "document/document.h"
#include "maps/channel_maps.h"
#include "session/session_file.h"
#include "views/channel_grid.h"
#include "views/color_bar.h"
#include "views/figure_image.h"
#include "views/overlay_image.h"
#include "views/qcustomplot_include.h"

#include <QComboBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QScrollArea>
#include <QSlider>
#include <QSpinBox>
#include <QSplitter>
#include <QStackedWidget>
#include <QToolBar>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace torchscope {
namespace {

bool isSpatial(const std::vector<int64_t>& shape)
{
    return shape.size() >= 3;
}

} // namespace

ActivationView::ActivationView(Document* document, QWidget* parent)
    : QWidget(parent)
    , document_(document)
    , keys_(new QComboBox)
    , zoom_(new QSpinBox)
    , contrast_(new QComboBox)
    , colorMap_(new QComboBox)
    , alpha_(new QSlider(Qt::Horizontal))
    , header_(new QLabel)
    , stack_(new QStackedWidget)
    , grid_(new ChannelGrid)
    , colorBar_(new ColorBar)
    , overlayLabel_(new QLabel)
    , plot_(new QCustomPlot)
    , heatScale_(new QCPColorScale(plot_)) // in the plot layout only while a heat map is shown
{
    keys_->setMinimumContentsLength(20);
    keys_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    keys_->setToolTip(tr("Grabbed value to show (tick layers in the module tree)"));
    zoom_->setRange(1, 32);
    zoom_->setValue(4);
    zoom_->setSuffix(tr(" px"));
    zoom_->setToolTip(tr("Screen pixels per activation value"));
    contrast_->addItem(tr("Per channel"), int(Contrast::PerChannel));
    contrast_->addItem(tr("Shared"), int(Contrast::Shared));
    contrast_->addItem(tr("Symmetric ±"), int(Contrast::Symmetric));
    for (const auto& [map, name] : colorMapNames())
        colorMap_->addItem(QString::fromStdString(name), int(map));
    alpha_->setRange(0, 100);
    alpha_->setValue(55);
    alpha_->setToolTip(tr("Overlay opacity"));
    alpha_->setMinimumWidth(80);
    header_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    header_->setWordWrap(true); // a long header must not widen the window
    overlayLabel_->setAlignment(Qt::AlignCenter);
    overlayLabel_->setMinimumSize(160, 160);
    // The picture must not claim space from the grid: it is scaled into whatever it gets.
    overlayLabel_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Ignored);

    // A tool bar: in a narrow window what does not fit goes behind its » button.
    auto* controls = new QToolBar;
    controls->setIconSize(QSize(16, 16));
    controls->addWidget(new QLabel(tr("Value: ")));
    controls->addWidget(keys_);
    controls->addSeparator();
    controls->addWidget(new QLabel(tr("Zoom: ")));
    controls->addWidget(zoom_);
    controls->addWidget(new QLabel(tr(" Contrast: ")));
    controls->addWidget(contrast_);
    controls->addWidget(new QLabel(tr(" Colours: ")));
    controls->addWidget(colorMap_);
    controls->addWidget(new QLabel(tr(" Overlay: ")));
    controls->addWidget(alpha_);

    auto* scroll = new QScrollArea;
    scroll->setWidget(grid_);
    scroll->setWidgetResizable(true);
    // The colour bar sits between the grid and the overlay: it is the scale of both (per channel:
    // the picked channel's).
    auto* overlayColumn = new QWidget;
    auto* overlayLayout = new QHBoxLayout(overlayColumn);
    overlayLayout->setContentsMargins(0, 0, 0, 0);
    overlayLayout->addWidget(colorBar_);
    overlayLayout->addWidget(overlayLabel_, 1);
    auto* spatial = new QSplitter;
    spatial->addWidget(scroll);
    spatial->addWidget(overlayColumn);
    spatial->setStretchFactor(0, 3);
    spatial->setStretchFactor(1, 2);
    spatial->setSizes({600, 400});
    spatial->setChildrenCollapsible(false);
    heatScale_->axis()->setLabel(tr("value"));
    stack_->addWidget(spatial);
    stack_->addWidget(plot_);

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(controls);
    layout->addWidget(header_);
    layout->addWidget(stack_, 1);

    connect(document_, &Document::resultsChanged, this, &ActivationView::refresh);
    connect(document_, &Document::selectionChanged, this, &ActivationView::refresh);
    connect(keys_, &QComboBox::currentTextChanged, this, [this](const QString& key) {
        if (!key.isEmpty())
            document_->setSelectedKey(key);
    });
    for (QComboBox* box : {contrast_, colorMap_})
        connect(box, &QComboBox::currentIndexChanged, this, &ActivationView::refresh);
    connect(zoom_, &QSpinBox::valueChanged, grid_, &ChannelGrid::setZoom);
    connect(alpha_, &QSlider::valueChanged, this, &ActivationView::updateOverlay);
    connect(grid_, &ChannelGrid::channelPicked, document_, &Document::setSelectedChannel);
    connect(grid_, &ChannelGrid::channelPageRequested, this, [this](int64_t channel) {
        // Outputs only: an input or a gradient has no unit to excite.
        const CaptureKey key = CaptureKey::parse(shownKey_.toStdString());
        if (key.kind == CaptureKind::Output && key.path != "output" && key.path.rfind("probe:", 0) != 0)
            Q_EMIT channelPageRequested(QString::fromStdString(key.path), static_cast<int>(channel));
    });
    connect(document_, &Document::channelSelected, this, [this](int channel) {
        if (channel >= 0 && channel < grid_->channelCount() && channel != channel_)
            pickChannel(channel);
    });
}

int ActivationView::channelCount() const
{
    return grid_->channelCount();
}

QImage ActivationView::gridImage() const
{
    if (isPlotShown())
        return plot_->toPixmap().toImage();
    const ImageResult* result = document_->selectedResult();
    if (!result)
        return grid_->figureImage();
    // A figure that says what it is: the title (layer, image, model), the numbered grid, the scale.
    ColorBar bar;
    const auto map = ColorMap(colorMap_->currentData().toInt());
    if (shownContrast() == Contrast::PerChannel) {
        bar.setScale(0.0, 1.0, map, tr("each channel: its min (0) to max (1)"));
    } else {
        const ChannelRange range = grid_->channelRange(0);
        bar.setScale(range.low, range.high, map, tr("all channels"));
    }
    return figureImage(figureTitle(*result, shownKey_), grid_->figureImage(), bar);
}

QImage ActivationView::overlayImage() const
{
    const ImageResult* result = document_->selectedResult();
    if (overlay_.isNull() || !result)
        return overlay_;
    return figureImage(figureTitle(*result, tr("%1, channel %2").arg(shownKey_).arg(channel_)), overlay_, *colorBar_);
}

// "layer — image.png — model.pt"
QString ActivationView::figureTitle(const ImageRunItem& result, const QString& what) const
{
    return tr("%1 — %2 — %3")
        .arg(what, QFileInfo(QString::fromStdString(result.path)).fileName(),
            QFileInfo(document_->modelPath()).fileName());
}

bool ActivationView::isPlotShown() const
{
    return stack_->currentWidget() == plot_;
}

void ActivationView::fillKeys()
{
    QStringList keys;
    if (const ImageResult* result = document_->selectedResult())
        for (const auto& entry : result->values)
            keys << QString::fromStdString(entry.first);
    QStringList current;
    for (int i = 0; i < keys_->count(); ++i)
        current << keys_->itemText(i);
    const QString wanted = document_->selectedKey();
    if (current != keys) {
        const QSignalBlocker block(keys_);
        keys_->clear();
        keys_->addItems(keys);
    }
    const QSignalBlocker block(keys_);
    keys_->setCurrentIndex(std::max<qsizetype>(0, keys.indexOf(wanted)));
}

void ActivationView::refresh()
{
    fillKeys();
    const ImageResult* result = document_->selectedResult();
    const QString key = keys_->currentText();
    const auto it = result ? result->values.find(key.toStdString()) : decltype(result->values.end()){};
    if (!result || key.isEmpty() || it == result->values.end()) {
        shownKey_.clear();
        shownShape_.clear();
        const QString failure = document_->imageFailure(document_->selectedImage());
        if (!failure.isEmpty())
            header_->setText(tr("This image could not be read: %1").arg(failure.toHtmlEscaped()));
        else if (document_->images().isEmpty())
            header_->setText(tr("Drop images or a folder on the window (or File > Open Images, Ctrl+I)."));
        else
            header_->setText(document_->grabs().isEmpty()
                    ? tr("Tick a layer in the module tree to see its activations.")
                    : tr("No value for this image yet: it is being run."));
        grid_->setMaps({}, Contrast::PerChannel, ColorMap::Viridis);
        colorBar_->clearScale();
        overlay_ = QImage();
        overlayLabel_->clear();
        return;
    }
    const FloatTensor& value = it->second;
    shownKey_ = key;
    shownShape_ = value.shape; // the worker already removed the batch dimension
    const auto [lo, hi] = std::minmax_element(value.values.begin(), value.values.end());
    QString header
        = tr("<b>%1</b> for %2: shape %3, values %4 … %5")
              .arg(key.toHtmlEscaped(), QFileInfo(QString::fromStdString(result->path)).fileName().toHtmlEscaped(),
                  QString::fromStdString(shapeToString(value.shape)))
              .arg(value.values.empty() ? 0.0 : *lo, 0, 'g', 4)
              .arg(value.values.empty() ? 0.0 : *hi, 0, 'g', 4);
    if (isGradientKey(key) && !result->gradientTarget.empty()) // this image's own target
        header += tr("; the gradient of %1").arg(QString::fromStdString(result->gradientTarget).toHtmlEscaped());
    const TokenGrid tokens = tokenGrid(value.shape);
    if (tokens.side > 0) {
        header += tr("; tokens as a %1×%1 patch grid, one map per feature").arg(tokens.side);
        if (tokens.extraTokens > 0) {
            const FloatTensor cls = classTokens(value, tokens);
            const auto [clsLo, clsHi] = std::minmax_element(cls.values.begin(), cls.values.end());
            header += tr("; class token apart (%1 features, values %2 … %3)")
                          .arg(tokens.features)
                          .arg(*clsLo, 0, 'g', 4)
                          .arg(*clsHi, 0, 'g', 4);
        }
        shownMaps_ = tokenMaps(value, tokens);
    } else {
        shownMaps_ = value;
    }
    header_->setText(header);
    if (isSpatial(shownMaps_.shape))
        showSpatial(shownMaps_);
    else
        showPlot(shownMaps_);
}

void ActivationView::showSpatial(const FloatTensor& value)
{
    stack_->setCurrentIndex(0);
    const Contrast contrast = shownContrast();
    const MapLayout layout = mapLayout(value.shape);
    if (shownKey_ != zoomedKey_) {
        // A new layer: tiles of about 64 screen pixels; the spin box changes it from there.
        zoomedKey_ = shownKey_;
        const QSignalBlocker block(zoom_);
        const int fitted = std::clamp(int(64 / std::max<int64_t>(1, std::max(layout.height, layout.width))), 1, 32);
        zoom_->setValue(restoredZoom_ > 0 ? restoredZoom_ : fitted);
        restoredZoom_ = 0;
        // The overlay starts on the channel that responds most (by mean magnitude), not on
        // channel 0, which after a ReLU is often silent.
        const int64_t size = layout.height * layout.width;
        double best = -1.0;
        for (int64_t c = 0; c < layout.channels && size > 0; ++c) {
            double sum = 0.0;
            for (int64_t i = c * size; i < (c + 1) * size; ++i)
                sum += std::abs(value.values[static_cast<size_t>(i)]);
            if (sum > best) {
                best = sum;
                channel_ = static_cast<int>(c);
            }
        }
    }
    grid_->setZoom(zoom_->value());
    grid_->setMaps(value, contrast, ColorMap(colorMap_->currentData().toInt()));
    channel_ = std::clamp(channel_, 0, std::max(0, grid_->channelCount() - 1));
    grid_->setSelectedChannel(channel_);
    document_->setSelectedChannel(channel_);
    updateOverlay();
}

SessionView ActivationView::viewSettings() const
{
    SessionView view;
    view.colorMap = colorMap_->currentText().toStdString();
    view.contrast = SessionView::contrastNames().at(static_cast<size_t>(contrast_->currentData().toInt()));
    view.zoom = zoom_->value();
    view.overlayOpacity = alpha_->value();
    return view;
}

void ActivationView::applyViewSettings(const SessionView& view)
{
    if (!view.colorMap.empty())
        colorMap_->setCurrentText(QString::fromStdString(view.colorMap));
    const auto& contrasts = SessionView::contrastNames();
    if (const auto it = std::find(contrasts.begin(), contrasts.end(), view.contrast); it != contrasts.end())
        contrast_->setCurrentIndex(contrast_->findData(int(it - contrasts.begin())));
    if (view.zoom > 0) {
        restoredZoom_ = view.zoom;
        zoomedKey_.clear(); // the layer shown next takes it, even if it is the one shown now
    }
    if (view.overlayOpacity >= 0)
        alpha_->setValue(view.overlayOpacity);
}

Contrast ActivationView::shownContrast() const
{
    // Gradients are signed: "per channel" shows them around zero on one scale.
    if (isGradientKey(shownKey_) && contrast_->currentIndex() == 0)
        return Contrast::Symmetric;
    return Contrast(contrast_->currentData().toInt());
}

void ActivationView::updateColorBar()
{
    const ChannelRange range = grid_->channelRange(channel_);
    const auto map = ColorMap(colorMap_->currentData().toInt());
    if (grid_->channelCount() == 0) {
        colorBar_->clearScale();
        return;
    }
    const bool own = shownContrast() == Contrast::PerChannel;
    colorBar_->setScale(range.low, range.high, map,
        own ? tr("channel %1%2").arg(channel_).arg(range.constant ? tr(" (constant)") : QString())
            : tr("all channels"));
}

void ActivationView::showPlot(const FloatTensor& value)
{
    stack_->setCurrentIndex(1);
    plot_->clearPlottables();
    plot_->clearItems();
    if (plot_->plotLayout()->hasElement(0, 1))
        plot_->plotLayout()->take(heatScale_);
    plot_->plotLayout()->simplify();
    const MapLayout layout = mapLayout(value.shape);
    if (layout.height == 1 || value.shape.size() <= 1) { // a vector: one bar per feature
        auto* bars = new QCPBars(plot_->xAxis, plot_->yAxis);
        QVector<double> x, y;
        for (size_t i = 0; i < value.values.size(); ++i) {
            x << double(i);
            y << value.values[i];
        }
        bars->setData(x, y);
        bars->setWidth(0.8);
        plot_->xAxis->setLabel(tr("feature"));
        plot_->yAxis->setLabel(tr("value"));
        // Whole-numbered features over exactly their bars, and the value axis from 0: rescaleAxes
        // gave a single bar (an age, a score) a zero-width range whose ticks were stray labels.
        auto ticker = QSharedPointer<QCPAxisTickerFixed>::create();
        ticker->setTickStep(1.0);
        ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
        plot_->xAxis->setTicker(ticker);
        double low = 0.0, high = 0.0;
        for (const double v : y) {
            low = std::min(low, v);
            high = std::max(high, v);
        }
        const double pad = high > low ? 0.05 * (high - low) : 1.0;
        plot_->xAxis->setRange(-0.6, static_cast<double>(x.size()) - 0.4);
        plot_->yAxis->setRange(low - (low < 0.0 ? pad : 0.0), high + (high > 0.0 || low == high ? pad : 0.0));
        plot_->replot();
        overlay_ = QImage();
        return;
    } else { // token x feature: a heat map
        auto* map = new QCPColorMap(plot_->xAxis, plot_->yAxis);
        map->data()->setSize(int(layout.width), int(layout.height));
        map->data()->setRange(QCPRange(0, layout.width - 1), QCPRange(0, layout.height - 1));
        for (int64_t y = 0; y < layout.height; ++y)
            for (int64_t x = 0; x < layout.width; ++x)
                map->data()->setCell(int(x), int(y), value.values[static_cast<size_t>(y * layout.width + x)]);
        plot_->plotLayout()->addElement(0, 1, heatScale_);
        map->setColorScale(heatScale_);
        map->setGradient(QCPColorGradient::gpThermal);
        map->rescaleDataRange();
        plot_->xAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
        plot_->xAxis->setLabel(tr("feature"));
        plot_->yAxis->setLabel(tr("position"));
    }
    plot_->rescaleAxes();
    plot_->replot();
    overlay_ = QImage();
}

void ActivationView::pickChannel(int channel)
{
    channel_ = channel;
    grid_->setSelectedChannel(channel);
    updateOverlay();
}

void ActivationView::updateOverlay()
{
    updateColorBar();
    const ImageResult* result = document_->selectedResult();
    if (!result || shownKey_.isEmpty() || isPlotShown() || result->picture.empty())
        return;
    // The channel as the grid draws it (the colour bar's scale), upsampled and blended over the picture.
    const float* map = grid_->drawnMap(channel_);
    if (!map)
        return;
    const QSize size = grid_->mapSize();
    overlay_ = torchscope::overlayImage(result->picture, map, size.width(), size.height(),
        ColorMap(colorMap_->currentData().toInt()), alpha_->value() / 100.f);
    const QSize room = overlayLabel_->size().boundedTo(QSize(512, 512)).expandedTo(QSize(160, 160));
    overlayLabel_->setPixmap(QPixmap::fromImage(overlay_.scaled(room, Qt::KeepAspectRatio, Qt::FastTransformation)));
    overlayLabel_->setToolTip(tr("Channel %1 of %2 over the input image").arg(channel_).arg(shownKey_));
}

} // namespace torchscope
