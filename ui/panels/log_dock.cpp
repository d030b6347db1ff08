#include "panels/log_dock.h"

#include <QPlainTextEdit>
#include <QScrollBar>
#include <QTime>
#include <QTimer>

namespace torchscope {

LogDock::LogDock(QWidget* parent)
    : QDockWidget(tr("Log"), parent)
    , view_(new QPlainTextEdit)
{
    setObjectName("LogDock");
    view_->setReadOnly(true);
    view_->setMaximumBlockCount(5000);
    setWidget(view_);
    // Lines added while the dock was closed left it at the first: opened, it shows the newest
    // (once laid out, hence queued).
    connect(this, &QDockWidget::visibilityChanged, this, [this](bool visible) {
        if (visible)
            QTimer::singleShot(0, view_,
                [view = view_] { view->verticalScrollBar()->setValue(view->verticalScrollBar()->maximum()); });
    });
}

void LogDock::append(const QString& message)
{
    QScrollBar* bar = view_->verticalScrollBar();
    const bool following = !view_->isVisible() || bar->value() == bar->maximum();
    view_->appendPlainText(QTime::currentTime().toString("HH:mm:ss ") + message);
    if (following)
        bar->setValue(bar->maximum());
}

QString LogDock::text() const
{
    return view_->toPlainText();
}

} // namespace torchscope
