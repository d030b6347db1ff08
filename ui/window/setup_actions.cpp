#include "window/setup_actions.h"

#include "dialogs/model_setup_dialog.h"
#include "dialogs/save_dialog.h"
#include "document/document.h"
#include "jobs/job_handle.h"
#include "jobs/run_controller.h"
#include "model/model_setup.h"

#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QMessageBox>
#include <QPushButton>
#include <QSettings>
#include <QToolButton>
#include <QUrl>

namespace torchscope {
namespace {

QString settingsKey(const QString& modelPath)
{
    return "setups/" + QString::fromLatin1(QUrl::toPercentEncoding(QFileInfo(modelPath).absoluteFilePath()));
}

} // namespace

SetupActions::SetupActions(Document* document, RunController* controller, QWidget* window)
    : QObject(window)
    , document_(document)
    , controller_(controller)
    , window_(window)
    , dialog_(new ModelSetupDialog(window))
    , status_(new QToolButton)
{
    status_->setAutoRaise(true);
    status_->setToolButtonStyle(Qt::ToolButtonTextOnly);
    status_->setMaximumWidth(560);
    connect(status_, &QToolButton::clicked, this, &SetupActions::openDialog);
    connect(document_, &Document::setupChanged, this, &SetupActions::showStatus);
    connect(controller_, &RunController::modelOpened, this, &SetupActions::modelOpened);
    connect(controller_, &RunController::setupProblemFound, this, &SetupActions::setupProblem);
    connect(dialog_, &QDialog::accepted, this, &SetupActions::applyDialog);
    connect(dialog_, &ModelSetupDialog::resetRequested, this,
        [this] { dialog_->setSetup(document_->model().setup, QFileInfo(document_->modelPath()).fileName()); });
    showStatus();
}

void SetupActions::populate(QMenu* menu)
{
    QAction* setup = menu->addAction(tr("&Input Setup…"), this, &SetupActions::openDialog);
    setup->setShortcut(Qt::CTRL | Qt::SHIFT | Qt::Key_I);
    menu->addAction(tr("&Save Setup Into Model…"), this, [this] {
        if (!document_->hasModel())
            return;
        const QFileInfo model(document_->modelPath());
        // The copy keeps the model's format: a .pt2 stays a torch.export archive.
        const bool exported = model.suffix() == "pt2";
        const QString path = askSavePath(window_, tr("Save Setup Into a Copy of the Model"),
            model.dir().filePath(model.completeBaseName() + (exported ? "_setup.pt2" : "_setup.pt")),
            exported ? tr("torch.export programs (*.pt2)") : tr("TorchScript models (*.pt)"));
        if (path.isEmpty())
            return;
        saveIntoModel(path);
    });
}

void SetupActions::openDialog()
{
    if (!document_->hasModel())
        return;
    dialog_->setSetup(document_->setup(), QFileInfo(document_->modelPath()).fileName());
    dialog_->setAdvicePending();
    JobHandle* job = controller_->start<SetupAdviceAnalysis>(document_->setup(), this);
    connect(job, &JobHandle::succeeded, this, [this, job] {
        const SetupAdvice advice = *job->result<SetupAdvice>();
        dialog_->setAdvice(advice);
        Q_EMIT advised(advice);
    });
    dialog_->open();
}

void SetupActions::saveIntoModel(const QString& path)
{
    JobHandle* job = controller_->startTask(
        tr("Error Saving Setup"), JobLane::Interactive,
        [model = document_->modelPath().toStdString(), file = path.toStdString(), setup = document_->setup()](
            ModelSource&) { writeModelWithSetup(model, file, setup); },
        this);
    connect(job, &JobHandle::succeeded, this, [this, path] {
        Q_EMIT saved(path);
        Q_EMIT message(tr("Saved %1 with the input setup as its torchscope.json: it opens with this setup").arg(path));
    });
}

void SetupActions::modelOpened()
{
    const ModelSummary& model = document_->model();
    if (model.hasStoredSetup)
        return;
    const QString remembered = QSettings().value(settingsKey(document_->modelPath())).toString();
    if (!remembered.isEmpty()) {
        try {
            document_->setSetup(ModelSetup::fromJson(remembered.toStdString()), tr("remembered for this file"));
            return;
        } catch (const std::exception&) {
            // A setting from another version: ask again.
        }
    }
    Q_EMIT message(tr("%1 stores no input setup (torchscope.json): ImageNet's is used until you set one in "
                      "Model > Input Setup…")
                       .arg(QFileInfo(document_->modelPath()).fileName()));
    if (interactive_ && autoOpen_)
        openDialog();
}

void SetupActions::announce(const QString& source)
{
    Q_EMIT message(tr("Input setup %1: %2").arg(source, QString::fromStdString(document_->setup().describe())));
}

void SetupActions::applyDialog()
{
    ModelSetup setup;
    try {
        setup = dialog_->setup();
    } catch (const std::exception& e) {
        Q_EMIT failed(tr("Error in Input Setup"), QString::fromStdString(e.what()));
        return;
    }
    QSettings().setValue(settingsKey(document_->modelPath()), QString::fromStdString(setup.toJson()));
    document_->setSetup(setup, tr("set by you"));
    Q_EMIT message(tr("Input setup: %1").arg(QString::fromStdString(setup.describe())));
}

void SetupActions::showStatus()
{
    if (!document_->hasModel()) {
        status_->setText(QString());
        status_->hide();
        return;
    }
    status_->show();
    const QString text = tr("Input: %1").arg(QString::fromStdString(document_->setup().describe()));
    status_->setText(status_->fontMetrics().elidedText(text, Qt::ElideRight, status_->maximumWidth() - 16));
    status_->setToolTip(tr("%1\n(%2)\nClick to change it (Model > Input Setup…)")
                            .arg(QString::fromStdString(document_->setup().describe()), document_->setupSource()));
}

void SetupActions::setupProblem(const QString& text)
{
    if (!interactive_) {
        Q_EMIT failed(tr("Error Running Model"), text);
        return;
    }
    if (dialog_->isVisible()) { // being set up right now: a line in the log, no box over the dialog
        Q_EMIT message(tr("The model failed on the current input setup: %1").arg(text.section("\n\n", 0, 0)));
        return;
    }
    QMessageBox box(
        QMessageBox::Critical, tr("Error Running Model"), text.section("\n\n", 0, 0), QMessageBox::Close, window_);
    box.setInformativeText(text.section("\n\n", 1));
    QPushButton* fix = box.addButton(tr("Input Setup…"), QMessageBox::AcceptRole);
    box.setDefaultButton(fix);
    box.exec();
    if (box.clickedButton() == fix)
        openDialog();
}

} // namespace torchscope
