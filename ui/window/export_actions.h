#pragma once

#include <QObject>
#include <QString>

class QMenu;
class QWidget;

namespace torchscope {

class ActivationView;
class RunController;
class StatisticsPanel;

// File > Export, built from core's registry of tensor formats plus the pictures the views draw.
// Every write is atomic (temporary file, then rename); errors go to the window's error report.
class ExportActions : public QObject {
    Q_OBJECT
public:
    ExportActions(
        RunController* controller, ActivationView* activations, StatisticsPanel* statistics, QWidget* dialogParent);

    void populate(QMenu* menu);

    void exportTensors(const QString& path); // asynchronous: RunController::exported / failed
    QString exportActivationGrid(const QString& path) const; // error or ""
    QString exportOverlay(const QString& path) const;
    QString exportPlot(const QString& path) const;

Q_SIGNALS:
    void failed(const QString& title, const QString& message);
    void done(const QString& message);

private:
    QString askPath(const QString& title, const QString& filter) const;

    RunController* controller_;
    ActivationView* activations_;
    StatisticsPanel* statistics_;
    QWidget* dialogParent_;
};

} // namespace torchscope
