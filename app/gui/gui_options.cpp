#include "gui_options.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>

GuiOptions parseGuiOptions(const QStringList& arguments)
{
    GuiOptions options;
    for (int i = 1; i < arguments.size(); ++i) {
        const QString& arg = arguments[i];
        if (arg == "--select" || arg == "--screenshot" || arg == "--probe-data" || arg == "--sweep"
            || arg == "--sweep-plot" || arg == "--gradcam" || arg == "--setup" || arg == "--labels") {
            if (i + 1 >= arguments.size()) {
                options.error = arg + " needs a value";
                return options;
            }
            const QString value = arguments[++i];
            if (arg == "--select")
                options.select = value;
            else if (arg == "--screenshot")
                options.screenshot = value;
            else if (arg == "--probe-data")
                options.probeData = value;
            else if (arg == "--sweep")
                options.sweep = value.split(',', Qt::SkipEmptyParts);
            else if (arg == "--gradcam")
                options.gradCam = value;
            else if (arg == "--setup")
                options.setup = value;
            else if (arg == "--labels")
                options.labels = value;
            else
                options.sweepPlot = value;
        } else if (arg.startsWith("-")) {
            options.error = "unknown option " + arg;
            return options;
        } else {
            options.files << arg;
        }
    }
    if (!options.sweep.isEmpty() && options.probeData.isEmpty())
        options.error = "--sweep needs --probe-data DIR (one subfolder per class)";
    return options;
}

QStringList bundledDemoFiles()
{
    // Installed beside the binary (../share/torchscope/face), else the source tree.
    QString face = QCoreApplication::applicationDirPath() + "/../share/torchscope/face";
    if (!QFileInfo::exists(face + "/face_expression.pt"))
        face = QString(TORCHSCOPE_RESOURCES_DIR) + "/face";
    return {QDir(face).filePath("face_expression.pt"), QDir(face).filePath("photos")};
}
