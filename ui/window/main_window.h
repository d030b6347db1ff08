#pragma once

#include <QMainWindow>

class QComboBox;
class QLabel;
class QMenu;
class QProgressBar;
class QSpinBox;
class QTabWidget;
class QToolButton;

namespace torchscope {

class ActivationView;
class GradCamView;
class ChannelPage;
class AttentionPanel;
class RelevancePanel;
class FeaturesPanel;
class ConceptsPanel;
class AttributionPanel;
class ComparePanel;
class PatchingView;
class ProbesPanel;
class Document;
class ExportActions;
class ImageStrip;
class LogDock;
class ModuleTreePanel;
class PredictionsPanel;
class RecordersPanel;
class RunController;
class SessionIo;
class SetupActions;
class StatisticsPanel;

// The workbench window: assembles the panels around one Document, routes files (open, drop,
// command line) and reports errors. The work itself lives in the panels, the RunController and
// the action handlers.
class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    Document* document() const { return document_; }
    RunController* controller() const { return controller_; }
    ModuleTreePanel* treePanel() const { return tree_; }
    ActivationView* activationView() const { return activations_; }
    PredictionsPanel* predictionsPanel() const { return predictions_; }
    StatisticsPanel* statisticsPanel() const { return statistics_; }
    RecordersPanel* recordersPanel() const { return recorders_; }
    ImageStrip* imageStrip() const { return images_; }
    LogDock* logDock() const { return log_; }
    ExportActions* exportActions() const { return exports_; }
    ProbesPanel* probesPanel() const { return probes_; }
    GradCamView* gradCamView() const { return gradCam_; }
    PatchingView* patchingView() const { return patching_; }
    ComparePanel* comparePanel() const { return compare_; }
    AttributionPanel* attributionPanel() const { return attribution_; }
    AttentionPanel* attentionPanel() const { return attention_; }
    RelevancePanel* relevancePanel() const { return relevance_; }
    FeaturesPanel* featuresPanel() const { return features_; }
    ConceptsPanel* conceptsPanel() const { return concepts_; }
    SetupActions* setupActions() const { return setup_; }
    enum class CentralTab {
        Activations,
        Attribution,
        Workbench,
        Attention,
        Relevance,
        Patching,
        Recorders,
        Probes,
        Compare,
        Features,
        Concepts
    };
    void showCentralTab(CentralTab tab);

    // Errors are shown in a message box unless the window is not interactive (tests, screenshots);
    // they always go to the log.
    void setInteractive(bool interactive);

    void openModel(const QString& path);
    // Models, images, folders and session files, as dropped or given on the command line.
    void openFiles(const QStringList& paths);
    QString saveSession(const QString& path); // error or ""
    QString openSession(const QString& path); // error or "" (the model then opens asynchronously)
    // A channel's page (feature visualisation, top images of the last recording), optimising at
    // once; null without a model.
    ChannelPage* openChannelPage(const QString& layer, int channel);

public Q_SLOTS:
    void reportError(const QString& title, const QString& message);

Q_SIGNALS:
    void errorReported(const QString& title, const QString& message);

protected:
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;
    void closeEvent(QCloseEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

private:
    void createMenus();
    void createToolBar();
    void createStatusBar();
    void createDocks();
    void sizeDocks(); // their default share of the window
    void resetLayout();
    void rememberRecent(const char* key, const QString& path); // up to 8, most recent first
    void fillRecentMenus();
    static QString shortcutsText();
    static QString coreIdeasText();
    void updateTitle();

    Document* document_;
    RunController* controller_;
    ModuleTreePanel* tree_;
    ActivationView* activations_;
    PredictionsPanel* predictions_;
    StatisticsPanel* statistics_;
    RecordersPanel* recorders_;
    ImageStrip* images_;
    LogDock* log_;
    ExportActions* exports_;
    ProbesPanel* probes_;
    GradCamView* gradCam_;
    PatchingView* patching_;
    ComparePanel* compare_;
    AttributionPanel* attribution_;
    AttentionPanel* attention_;
    RelevancePanel* relevance_;
    FeaturesPanel* features_;
    ConceptsPanel* concepts_;
    SetupActions* setup_;
    SessionIo* sessions_;
    QTabWidget* central_ = nullptr;
    QMenu* recentMenu_ = nullptr;
    QMenu* recentSessionsMenu_ = nullptr;
    QComboBox* device_ = nullptr;
    QSpinBox* target_ = nullptr;
    QLabel* truncation_ = nullptr;
    QLabel* status_ = nullptr;
    QProgressBar* progress_ = nullptr;
    QToolButton* cancel_ = nullptr;
    bool interactive_ = true;
    QByteArray defaultState_; // the docks as first laid out, for View > Reset Layout
};

} // namespace torchscope
