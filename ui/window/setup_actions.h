#pragma once

#include "jobs/run_metatypes.h"

#include <QObject>

class QMenu;
class QToolButton;
class QWidget;

namespace torchscope {

class Document;
class ModelSetupDialog;
class RunController;

// The model's input setup in the window: Model > Input Setup… (opened by itself for a model that
// stores no setup and was never set up here), Save Setup Into Model…, the status bar's setup
// button, setups remembered per model file, and run failures that point at the setup.
class SetupActions : public QObject {
    Q_OBJECT
public:
    SetupActions(Document* document, RunController* controller, QWidget* window);

    void populate(QMenu* menu);
    QToolButton* statusButton() const { return status_; }
    ModelSetupDialog* dialog() const { return dialog_; }
    // Non-interactive windows (tests, screenshots) open no dialog by themselves and show no boxes.
    void setInteractive(bool interactive) { interactive_ = interactive; }
    // Off when the setup comes from elsewhere (the command line): no dialog opens by itself.
    void setAutoOpen(bool autoOpen) { autoOpen_ = autoOpen; }
    // Says in the status bar what the setup now is and where it came from (the command line's
    // --setup replaces the "stores no input setup" note the model's opening left there).
    void announce(const QString& source);

    void openDialog();
    // Writes a copy of the model with the document's setup as its torchscope.json (asynchronously:
    // message() or failed() tell how it went).
    void saveIntoModel(const QString& path);

Q_SIGNALS:
    void message(const QString& text);
    void failed(const QString& title, const QString& message);
    void advised(const torchscope::SetupAdvice& advice); // shown in the dialog
    void saved(const QString& path); // a copy of the model with the setup inside

private:
    void modelOpened();
    void applyDialog();
    void showStatus();
    void setupProblem(const QString& message);

    Document* document_;
    RunController* controller_;
    QWidget* window_;
    ModelSetupDialog* dialog_;
    QToolButton* status_;
    bool interactive_ = true;
    bool autoOpen_ = true;
};

} // namespace torchscope
