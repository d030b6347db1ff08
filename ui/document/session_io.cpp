#include "document/session_io.h"

#include "document/document.h"
#include "jobs/run_controller.h"
#include "session/session_file.h"
#include "views/activation_view.h"

#include <QFile>
#include <QFileInfo>
#include <QSaveFile>

namespace torchscope {

SessionIo::SessionIo(Document* document, RunController* controller, ActivationView* view, QObject* parent)
    : QObject(parent)
    , document_(document)
    , controller_(controller)
    , view_(view)
{ }

QString SessionIo::save(const QString& path)
{
    SessionFile session = document_->toSession();
    session.view = view_->viewSettings();
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly))
        return file.errorString();
    file.write(QByteArray::fromStdString(session.toJson()));
    if (!file.commit())
        return file.errorString();
    return {};
}

QString SessionIo::open(const QString& path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return tr("Could not open '%1': %2").arg(path, file.errorString());
    const std::string text = file.readAll().toStdString();
    SessionFile session;
    try {
        session = SessionFile::parse(text, document_->setup());
    } catch (const std::exception& e) {
        return tr("'%1': %2").arg(path, QString::fromStdString(e.what()));
    }
    const QString model = QString::fromStdString(session.model);
    if (!QFileInfo::exists(model))
        return tr("The session's model '%1' does not exist").arg(model);
    auto* once = new QObject(this);
    connect(controller_, &RunController::modelOpened, once, [this, once, text, path] {
        once->deleteLater();
        // Parsed again on the opened model's setup: what a version-1 session leaves out comes from it.
        const SessionFile opened = SessionFile::parse(text, document_->setup());
        view_->applyViewSettings(opened.view);
        document_->applySession(opened);
        Q_EMIT this->opened(path);
    });
    Q_EMIT modelWanted(model, QString::fromStdString(session.device));
    return {};
}

} // namespace torchscope
