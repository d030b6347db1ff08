#pragma once

#include <QString>
#include <QStringList>

namespace torchscope {
class MainWindow;
}

namespace torchscope::test {

// Opens the demo model in a window made non-interactive (errors go to the log, not boxes); a
// QtTest failure when it does not open in two minutes.
void openDemo(MainWindow& window);
// The same for the model at `path`.
void openModel(MainWindow& window, const QString& path);

QString fixture(const QString& name);
// The clone's root folder (resources/ beneath it).
QString sourceDir();
// The environment's python, with torch (TORCHSCOPE_PYTHON).
QString pythonProgram();
QString demoModel();
QStringList demoImages();
// Runs TORCHSCOPE_PYTHON (the environment with torch) -c CODE; returns its stdout (trimmed), or "ERROR: ..." when it
// fails.
QString runPython(const QString& code);

} // namespace torchscope::test
