#pragma once

#include <QObject>
#include <QString>

namespace torchscope {

class ActivationView;
class Document;
class RunController;

// Session files (*.torchscope.json, core/session) for the window: what the Document holds and how
// the activation view draws. Writes atomically; reads in two steps, because grabs and edits are
// checked against the model's tree: the file first, the rest once its model is open.
class SessionIo : public QObject {
    Q_OBJECT
public:
    SessionIo(Document* document, RunController* controller, ActivationView* view, QObject* parent = nullptr);

    QString save(const QString& path); // error or ""
    // Checks the file and asks for its model (modelWanted); error or "".
    QString open(const QString& path);

Q_SIGNALS:
    void modelWanted(const QString& model, const QString& device); // device: "" for the window's
    void opened(const QString& path); // applied to the open model

private:
    Document* document_;
    RunController* controller_;
    ActivationView* view_;
};

} // namespace torchscope
