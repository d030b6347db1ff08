#pragma once

#include "jobs/run_metatypes.h"

#include <QImage>
#include <QWidget>

class QAction;
class QComboBox;
class QLabel;
class QPushButton;
class QRubberBand;
class QSlider;
class QSpinBox;

namespace torchscope {

class ColorBar;
class Document;
class RunController;

// Grad-CAM and saliency of the selected image: the class score's gradient with respect to a
// layer's output weighs its channels (Grad-CAM), or with respect to the input pixels (saliency),
// over the picture the model saw. Recomputed when the selection changes while it is shown.
class GradCamView : public QWidget {
    Q_OBJECT
public:
    GradCamView(Document* document, RunController* controller, QWidget* parent = nullptr);

    void setLayer(const QString& layer);
    QString layer() const;
    void setShowSaliency(bool saliency);
    void compute();
    QImage image() const { return image_; }
    ColorBar* colorBar() const { return colorBar_; }
    GradCamResultPtr lastResult() const { return result_; }
    QString savePng(const QString& path) const; // error or ""
    // Segmentation: explain the class summed over this box (model-input pixels) instead of over its
    // pixels; an empty box clears it. Dragging over the picture sets it too.
    void setRegion(const QRect& box);
    QRect region() const;

Q_SIGNALS:
    void finished(const torchscope::GradCamResultPtr& snapshot);
    void failed(const QString& title, const QString& message);

protected:
    void showEvent(QShowEvent* event) override;
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void fillLayers();
    void redraw();
    QPoint toImage(const QPoint& labelPosition) const; // a point on the picture label in image pixels

    Document* document_;
    RunController* controller_;
    QComboBox* layer_;
    QComboBox* mode_;
    QSpinBox* target_;
    QSlider* alpha_;
    QLabel* header_;
    QLabel* picture_;
    ColorBar* colorBar_;
    QPushButton* clearRegion_;
    QAction* clearRegionAction_ = nullptr; // its place in the tool bar: shown while a region is set
    QRubberBand* band_;
    QPoint dragStart_;
    GradCamResultPtr result_;
    QImage image_;
    QString figureTitle_; // what the exported picture says it is
    bool ranFullModel_ = false; // the last request ignored a truncation (Grad-CAM needs the score)
    std::vector<int64_t> region_; // segmentation: x0, y0, x1, y1 in model-input pixels, drawn by the user
};

} // namespace torchscope
