#pragma once

#include "jobs/job_runner.h"
#include "jobs/run_metatypes.h"

#include <QWidget>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLineEdit;
class QListWidget;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace torchscope {

class AttributionGrid;
class AttributionPlots;
class Document;
class JobSetupColumn;
class RunController;

// The attribution workbench: the window's images explained by every ticked method, the
// faithfulness metrics under each map, the sanity check, a summary over the images (mean ± sd per
// method × metric, sortable) and the curves; maps and metrics exported from the Export menu. One
// job of core's runAttributionWorkbench on the batch lane, with progress and cancel.
class AttributionPanel : public QWidget {
    Q_OBJECT
public:
    AttributionPanel(Document* document, RunController* controller, QWidget* parent = nullptr);

    QListWidget* methodList() const { return methods_; }
    QListWidget* metricList() const { return metrics_; }
    QComboBox* layerBox() const { return layer_; }
    QComboBox* sanityBox() const { return sanity_; }
    QComboBox* compositeBox() const { return composite_; }
    QComboBox* attentionRuleBox() const { return attentionRule_; }
    QLineEdit* relevanceRulesEdit() const { return relevanceRules_; }
    QCheckBox* sharedScaleBox() const { return sharedScale_; }
    QPushButton* startButton() const { return start_; }
    JobSetupColumn* column() const { return column_; }
    AttributionGrid* grid() const { return grid_; }
    AttributionPlots* plots() const { return plots_; }
    QTableWidget* summaryTable() const { return summary_; }
    AttributionWorkbenchResultPtr result() const { return result_; }

    // Writes the maps (.pt, .npz, .safetensors), the metrics (.json) or a plot ("curves" /
    // "sanity": .png, .pdf); returns an error message, or "" when written.
    QString exportTo(const QString& path, const QString& plot = {}) const;

Q_SIGNALS:
    void failed(const QString& title, const QString& message);
    void finished(const torchscope::AttributionWorkbenchResultPtr& result);

public Q_SLOTS:
    void start();

private:
    void buildForm();
    void showMethodRows();
    void buildExportMenu();
    void connectJobs();
    void fillLayers();
    void resetForModel();
    void addImage(const WorkbenchImageResult& part);
    void showSoFar();
    void showResult(const AttributionWorkbenchResultPtr& result);
    void fillSummary();
    QStringList ticked(const QListWidget* list) const;

    Document* document_;
    RunController* controller_;
    JobSetupColumn* column_;
    QListWidget* methods_;
    QComboBox* layer_;
    QSpinBox* target_;
    QSpinBox* steps_;
    QComboBox* baseline_;
    QSpinBox* samples_;
    QDoubleSpinBox* noise_;
    QListWidget* metrics_;
    QComboBox* sanity_;
    QComboBox* composite_;
    QComboBox* attentionRule_;
    QLineEdit* relevanceRules_;
    QCheckBox* sharedScale_;
    QPushButton* start_;
    AttributionGrid* grid_;
    QTableWidget* summary_;
    AttributionPlots* plots_;
    AttributionWorkbenchResultPtr result_;
    // The running job's images as they come (WorkbenchImageResult parts), drawn by the grid.
    std::shared_ptr<AttributionWorkbenchResult> soFar_;
    AttributionWorkbenchRequest shown_;
};

} // namespace torchscope
