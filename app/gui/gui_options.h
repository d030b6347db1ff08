#pragma once

#include <QString>
#include <QStringList>

// torchscope [MODEL] [IMAGES... | FOLDERS...] [--select PATH] [--screenshot FILE.png]
struct GuiOptions {
    QStringList files; // models, images, folders, sessions; empty: the bundled demo
    QString select;
    QString screenshot;
    QString error; // a usage error to print
};

GuiOptions parseGuiOptions(const QStringList& arguments);
QStringList bundledDemoFiles();
