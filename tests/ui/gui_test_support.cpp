#include "gui_test_support.h"

#include "jobs/run_controller.h"
#include "window/main_window.h"

#include <QDir>
#include <QProcess>
#include <QtTest>

namespace torchscope::test {

void openDemo(MainWindow& window)
{
    openModel(window, demoModel());
}

void openModel(MainWindow& window, const QString& path)
{
    window.setInteractive(false);
    QSignalSpy opened(window.controller(), &RunController::modelOpened);
    window.openModel(path);
    QVERIFY(opened.wait(120000));
}

QString demoModel()
{
    return sourceDir() + "/resources/demo/fashion_cnn.pt";
}

QStringList demoImages()
{
    const QDir dir(sourceDir() + "/resources/demo/images");
    QStringList images;
    for (const auto& name : dir.entryList({"*.png"}, QDir::Files, QDir::Name))
        images << dir.filePath(name);
    return images;
}

QString runPython(const QString& code)
{
    QProcess python;
    python.start(pythonProgram(), {"-c", code});
    if (!python.waitForFinished(120000) || python.exitCode() != 0)
        return "ERROR: " + QString::fromUtf8(python.readAllStandardError());
    return QString::fromUtf8(python.readAllStandardOutput()).trimmed();
}

} // namespace torchscope::test
