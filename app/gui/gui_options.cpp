#include "gui_options.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>

GuiOptions parseGuiOptions(const QStringList& arguments)
{
    GuiOptions options;
    for (int i = 1; i < arguments.size(); ++i) {
        const QString& arg = arguments[i];
        if (arg == "--select" || arg == "--screenshot") {
            if (i + 1 >= arguments.size()) {
                options.error = arg + " needs a value";
                return options;
            }
            (arg == "--select" ? options.select : options.screenshot) = arguments[++i];
        } else if (arg.startsWith("-")) {
            options.error = "unknown option " + arg;
            return options;
        } else {
            options.files << arg;
        }
    }
    return options;
}

QStringList bundledDemoFiles()
{
    // Installed beside the binary (../share/torchscope/demo), else the source tree.
    QString demo = QCoreApplication::applicationDirPath() + "/../share/torchscope/demo";
    if (!QFileInfo::exists(demo + "/fashion_cnn.pt"))
        demo = QString(TORCHSCOPE_RESOURCES_DIR) + "/demo";
    return {QDir(demo).filePath("fashion_cnn.pt"), QDir(demo).filePath("images")};
}
