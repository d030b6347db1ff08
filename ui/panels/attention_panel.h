#pragma once

#include "jobs/job_runner.h"
#include "jobs/run_metatypes.h"

#include <QWidget>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;

namespace torchscope {

class AttentionHeadGrid;
class AttentionPlots;
class ColorBar;
class Document;
class JobSetupColumn;
class RunController;

// Where a vision transformer's heads look, for the window's images: a layers × heads grid of each
// head's attention of the query token (the class token, or the patch clicked on the enlarged map)
// over the image; the picked head enlarged over the image with its colour bar; rollout and LeGrad
// beside it; each head's mean attention distance and entropy over the images. One job of core's
// runAttentionWorkbench on the batch lane, with progress and cancel; a new query redraws from the
// kept probabilities without running the model.
class AttentionPanel : public QWidget {
    Q_OBJECT
public:
    AttentionPanel(Document* document, RunController* controller, QWidget* parent = nullptr);

    QPushButton* startButton() const { return start_; }
    QComboBox* imageBox() const { return image_; }
    AttentionHeadGrid* grid() const { return grid_; }
    QLabel* enlargedMap() const { return enlarged_; }
    AttentionPlots* plots() const { return plots_; }
    JobSetupColumn* column() const { return column_; }
    AttentionWorkbenchResultPtr result() const { return result_; }
    int query() const { return query_; }

    // Picks the head shown enlarged; sets the query token (-1: the class token).
    void pick(int layer, int head);
    void setQuery(int token);
    // Writes the probabilities and figures (.pt, .npz, .safetensors) or a plot ("distance" /
    // "entropy": .png, .pdf); returns an error message, or "" when written.
    QString exportTo(const QString& path, const QString& plot = {}) const;

Q_SIGNALS:
    void failed(const QString& title, const QString& message);
    void finished(const torchscope::AttentionWorkbenchResultPtr& result);

public Q_SLOTS:
    void start();

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void buildForm();
    void buildExportMenu();
    void connectJobs();
    void resetForModel();
    void showResult(const AttentionWorkbenchResultPtr& result);
    void redraw();
    void drawEnlarged(int image);
    void drawWholeImageMaps(int image);
    QWidget* buildResults();

    Document* document_;
    RunController* controller_;
    JobSetupColumn* column_;
    QLineEdit* layers_;
    QComboBox* fusion_;
    QDoubleSpinBox* discard_;
    QCheckBox* legrad_;
    QSpinBox* target_;
    QPushButton* start_;
    QComboBox* image_;
    AttentionHeadGrid* grid_;
    QLabel* enlarged_;
    ColorBar* enlargedBar_;
    QLabel* caption_;
    QPushButton* classToken_;
    QLabel* rollout_;
    ColorBar* rolloutBar_;
    QLabel* legradMap_;
    ColorBar* legradBar_;
    AttentionPlots* plots_;
    AttentionWorkbenchResultPtr result_;
    AttentionWorkbenchRequest shown_;
    int layer_ = 0, head_ = 0, query_ = -1;
};

} // namespace torchscope
