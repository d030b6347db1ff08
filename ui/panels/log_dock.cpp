#include "panels/log_dock.h"

#include <QPlainTextEdit>
#include <QTime>

namespace torchscope {

LogDock::LogDock(QWidget* parent)
    : QDockWidget(tr("Log"), parent)
    , view_(new QPlainTextEdit)
{
    setObjectName("LogDock");
    view_->setReadOnly(true);
    view_->setMaximumBlockCount(5000);
    setWidget(view_);
}

void LogDock::append(const QString& message)
{
    view_->appendPlainText(QTime::currentTime().toString("HH:mm:ss ") + message);
}

QString LogDock::text() const
{
    return view_->toPlainText();
}

} // namespace torchscope
