#pragma once

#include <QString>
#include <QStringList>

namespace torchscope::test {

QString fixture(const QString& name);
QString demoModel();
QStringList demoImages();
// Runs /usr/bin/python3 -c CODE; returns its stdout (trimmed), or "ERROR: ..." when it fails.
QString runPython(const QString& code);

} // namespace torchscope::test
