#pragma once

#include "jobs/run_metatypes.h"
#include "sae/sae_evaluation.h"
#include "sae/sae_latents.h"
#include "sae/sae_training.h"

#include <QWidget>

#include <functional>
#include <memory>
#include <vector>

class QComboBox;
class QCustomPlot;
class QDoubleSpinBox;
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

// Features: sparse autoencoders on a layer of the open model (core's trainSparseAutoencoders and
// computeSaeLatents). Train an SAE on a layer over an image folder — its loss, FVU, L0 and dead
// latents plotted as it trains — or open a saved one; measure its latents over the folder: a
// table sortable by frequency, largest activation and ablation effect, searchable by the class a
// latent supports; its evaluation (FVU, L0, dead latents, and what splicing it in costs the model's
// predictions); a latent's page: its top images with its map over each, its histogram, its effect
// and its concepts (the Concepts tab's dissection of the SAE's latents); and splice it into the
// window's run with that latent ablated, scaled or steered. Jobs on the batch lane with progress and
// cancel.
class FeaturesPanel : public QWidget {
    Q_OBJECT
public:
    FeaturesPanel(Document* document, RunController* controller, QWidget* parent = nullptr);

    QComboBox* layerBox() const { return layer_; }
    QLineEdit* imagesField() const { return images_; }
    QLineEdit* saeField() const { return sae_; }
    QSpinBox* expansionBox() const { return expansion_; }
    QSpinBox* kBox() const { return k_; }
    QSpinBox* batchBox() const { return batch_; }
    QPushButton* trainButton() const { return train_; }
    QPushButton* latentsButton() const { return measure_; }
    QPushButton* evaluateButton() const { return evaluate_; }
    QLabel* evaluationLabel() const { return evaluation_; }
    QPushButton* spliceButton() const { return splice_; }
    QPushButton* visualizeButton() const { return visualize_; }
    QLabel* directionImage() const { return direction_; }
    QCustomPlot* trainingPlot() const { return curves_; }
    QTableWidget* latentTable() const { return table_; }
    QLineEdit* searchField() const { return search_; }
    QList<QLabel*> topImageLabels() const { return tops_; }
    QLabel* pageCaption() const { return pageCaption_; }
    JobSetupColumn* column() const { return column_; }
    std::shared_ptr<const SaeLatentsResult> latents() const { return latents_; }
    int64_t pickedLatent() const { return latent_; }

    void pickLatent(int64_t latent);
    // Where a latent's page finds its concept labels (ConceptsPanel::labelsOf of "sae:FOLDER").
    using ConceptLabels = std::function<QString(const QString& layer, int64_t latent, const QString& sae)>;
    void setConceptLabels(ConceptLabels labels) { conceptLabels_ = std::move(labels); }
    // Shows latent `latent` of the SAE in `sae` when its latents are the ones measured here; else puts
    // the SAE in the form and says to measure them.
    void showLatentOf(const QString& sae, int64_t latent);

Q_SIGNALS:
    void failed(const QString& title, const QString& message);
    void trained(const std::shared_ptr<const torchscope::SaeTrainingResult>& result);
    void latentsShown(const std::shared_ptr<const torchscope::SaeLatentsResult>& result);
    void evaluated(const std::shared_ptr<const torchscope::SaeEvaluationResult>& result);
    void directionShown();

public Q_SLOTS:
    void train();
    void measureLatents();
    void evaluate();
    void refreshPage() { drawPage(); } // the page again (its concepts changed)

private:
    void buildForm();
    QWidget* buildResults();
    void resetForModel();
    void fillLayers();
    void addStep(const SaeTrainingPart& part);
    void showTraining(const std::shared_ptr<const SaeTrainingResult>& result);
    void showLatents(const std::shared_ptr<const SaeLatentsResult>& result);
    void showEvaluation(const std::shared_ptr<const SaeEvaluationResult>& result);
    // Says in the summary what is missing for a job on the SAE over the folder (`overWhat`: what it
    // does over it); true when nothing is.
    bool saeJobCanStart(const QString& overWhat);
    void fillTable();
    void filterTable();
    void drawPage();
    void spliceLatent();
    void visualizeDirection();

    Document* document_;
    RunController* controller_;
    JobSetupColumn* column_;
    QComboBox* layer_;
    QLineEdit* images_;
    QSpinBox* expansion_;
    QSpinBox* k_;
    QComboBox* positions_;
    QSpinBox* batch_;
    QLineEdit* sae_;
    QPushButton* train_;
    QPushButton* measure_;
    QPushButton* evaluate_;
    QLabel* evaluation_;
    QCustomPlot* curves_;
    QTableWidget* table_;
    QLineEdit* search_;
    QLabel* pageTitle_;
    QHBoxLayout* topRow_;
    QList<QLabel*> tops_;
    QCustomPlot* histogram_;
    QLabel* pageCaption_;
    QComboBox* editOp_;
    QDoubleSpinBox* editValue_;
    QPushButton* splice_;
    QPushButton* unsplice_;
    QPushButton* visualize_;
    QLabel* direction_;
    std::vector<SaeTrainingPart> steps_;
    std::shared_ptr<const SaeLatentsResult> latents_;
    ConceptLabels conceptLabels_;
    int64_t latent_ = -1;
    bool layerPicked_ = false;
};

} // namespace torchscope

Q_DECLARE_METATYPE(std::shared_ptr<const torchscope::SaeTrainingResult>)
Q_DECLARE_METATYPE(std::shared_ptr<const torchscope::SaeLatentsResult>)
Q_DECLARE_METATYPE(std::shared_ptr<const torchscope::SaeEvaluationResult>)
