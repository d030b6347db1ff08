#pragma once

#include <QDockWidget>

class QPlainTextEdit;

namespace torchscope {

// The full text of every message, error and warning, with time stamps. It opens at the newest
// line, and follows new lines unless the reader has scrolled up.
class LogDock : public QDockWidget {
    Q_OBJECT
public:
    explicit LogDock(QWidget* parent = nullptr);
    QString text() const;
    QPlainTextEdit* view() const { return view_; }

public Q_SLOTS:
    void append(const QString& message);

private:
    QPlainTextEdit* view_;
};

} // namespace torchscope
