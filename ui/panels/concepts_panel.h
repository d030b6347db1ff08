#pragma once

#include "concepts/dissection.h"

#include <QWidget>

#include <memory>

class QComboBox;
class QCustomPlot;
class QHBoxLayout;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace torchscope {

class Document;
class JobSetupColumn;
class RunController;

// Concepts: network dissection of the open model (core's dissect). Pick a layer, a concept set (a
// folder: images/ and masks/CONCEPT/, a folder per concept, Broden; or one drawn here) and the units
// (channels, an SAE's latents, a probe's directions); the result: per category the interpretable
// units (IoU and INVERT), a table of units with their labels, scores and formulas, searchable by
// concept, and the picked unit's top images with its region outlined over the concept's mask.
// Double-clicking a channel opens its channel page, and a latent its page on the Features tab; both
// show the unit's concept labels. Jobs on the batch lane with progress and cancel.
class ConceptsPanel : public QWidget {
    Q_OBJECT
public:
    ConceptsPanel(Document* document, RunController* controller, QWidget* parent = nullptr);

    QComboBox* layerBox() const { return layer_; }
    QLineEdit* conceptsField() const { return concepts_; }
    QComboBox* unitsBox() const { return units_; }
    QLineEdit* unitsFileField() const { return unitsFile_; }
    QComboBox* methodBox() const { return method_; }
    QSpinBox* formulaBox() const { return formula_; }
    QPushButton* dissectButton() const { return dissect_; }
    QPushButton* makeSetButton() const { return makeSet_; }
    QTableWidget* unitTable() const { return table_; }
    QLineEdit* searchField() const { return search_; }
    QCustomPlot* categoryPlot() const { return plot_; }
    QList<QLabel*> topImageLabels() const { return tops_; }
    QLabel* unitCaption() const { return caption_; }
    JobSetupColumn* column() const { return column_; }
    std::shared_ptr<const DissectionResult> result() const { return result_; }
    int64_t pickedUnit() const { return unit_; }

    void pickUnit(int64_t unit);
    // The concept labels of `layer`'s unit from the last dissection, for its channel or latent page
    // ("" when there is none): `units` is what the unit is, "channels", "sae:FOLDER" (an SAE's
    // latents) or "probe:FILE", and must be what the dissection dissected.
    QString labelsOf(const QString& layer, int64_t unit, const QString& units = QStringLiteral("channels")) const;

Q_SIGNALS:
    void failed(const QString& title, const QString& message);
    void dissected(const std::shared_ptr<const torchscope::DissectionResult>& result);
    void channelPageRequested(const QString& layer, int channel);
    void latentPageRequested(const QString& sae, int latent);
    void setMade(const QString& folder);

public Q_SLOTS:
    void dissect();
    void makeSyntheticSet();

private:
    void buildForm();
    QWidget* buildResults();
    void resetForModel();
    void showResult(const std::shared_ptr<const DissectionResult>& result);
    void drawCategories();
    void fillTable();
    void filterTable();
    void drawUnit();

    Document* document_;
    RunController* controller_;
    JobSetupColumn* column_;
    QComboBox* layer_;
    QLineEdit* concepts_;
    QComboBox* units_;
    QLineEdit* unitsFile_;
    QComboBox* method_;
    QSpinBox* formula_;
    QPushButton* dissect_;
    QPushButton* makeSet_;
    QCustomPlot* plot_;
    QTableWidget* table_;
    QLineEdit* search_;
    QLabel* unitTitle_;
    QHBoxLayout* topRow_;
    QList<QLabel*> tops_;
    QLabel* caption_;
    std::shared_ptr<const DissectionResult> result_;
    QString resultUnits_; // the request's units: "channels", "sae:FOLDER", "probe:FILE"
    int64_t unit_ = -1;
    bool layerPicked_ = false;
};

} // namespace torchscope

Q_DECLARE_METATYPE(std::shared_ptr<const torchscope::DissectionResult>)
