#pragma once

#include "common/float_tensor.h"
#include "maps/channel_maps.h"

#include <QImage>
#include <QWidget>

#include <cstdint>
#include <vector>

class QComboBox;
class QCPColorScale;
class QCustomPlot;
class QLabel;
class QSlider;
class QSpinBox;
class QStackedWidget;

namespace torchscope {

struct ImageRunItem;

struct SessionView;
class ChannelGrid;
class ColorBar;
class Document;

// The selected grabbed value for the selected image: spatial outputs as a grid of channel maps
// (zoom, contrast, colour map) with the picked channel upsampled over the input picture;
// vision transformer tokens [T, D] on a square patch grid as D maps of the patches (the class
// token apart, in the header); vectors as a bar plot and other token x feature outputs as a heat map.
class ActivationView : public QWidget {
    Q_OBJECT
public:
    explicit ActivationView(Document* document, QWidget* parent = nullptr);

    QString shownKey() const { return shownKey_; }
    std::vector<int64_t> shownShape() const { return shownShape_; }
    int channelCount() const;
    QImage gridImage() const;
    // Exports: figures with a title (key, image, model) and the colour scale.
    QImage overlayImage() const;
    const QImage& overlayPicture() const { return overlay_; } // the map over the input, as shown
    // What a session keeps: colour map, contrast, zoom and overlay opacity. A restored zoom
    // applies to the next layer shown (the session's) instead of the fitted one.
    SessionView viewSettings() const;
    void applyViewSettings(const SessionView& view);
    bool isPlotShown() const;
    QCustomPlot* plot() const { return plot_; }
    ColorBar* colorBar() const { return colorBar_; }

Q_SIGNALS:
    // A channel of the shown layer's output, for its channel page.
    void channelPageRequested(const QString& layer, int channel);

public Q_SLOTS:
    void refresh();
    void pickChannel(int channel);

private:
    void fillKeys();
    void showSpatial(const FloatTensor& value);
    void showPlot(const FloatTensor& value);
    void updateOverlay();
    void updateColorBar();
    QString figureTitle(const ImageRunItem& result, const QString& what) const;
    Contrast shownContrast() const;

    Document* document_;
    QComboBox* keys_;
    QSpinBox* zoom_;
    QComboBox* contrast_;
    QComboBox* colorMap_;
    QSlider* alpha_;
    QLabel* header_;
    QStackedWidget* stack_;
    ChannelGrid* grid_;
    ColorBar* colorBar_;
    QLabel* overlayLabel_;
    QCustomPlot* plot_;
    QCPColorScale* heatScale_;
    QString shownKey_;
    QString zoomedKey_;
    int restoredZoom_ = 0; // from a session, for the next layer shown
    std::vector<int64_t> shownShape_;
    FloatTensor shownMaps_; // what the grid shows: the value, or its tokens as patch maps
    int channel_ = 0;
    QImage overlay_;
};

} // namespace torchscope
