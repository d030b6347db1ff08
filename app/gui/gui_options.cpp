#include "gui_options.h"

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>

GuiOptions parseGuiOptions(const QStringList& arguments)
{
    QCommandLineParser parser;
    parser.setApplicationDescription(
        "TorchScope: a workbench for looking inside TorchScript models and torch.export programs. With no files it "
        "opens the bundled face-expression network on its photos, features.dense2 ticked and its Grad-CAM shown.");
    const QCommandLineOption help({"h", "help"}, "Show this help and exit.");
    const QCommandLineOption version({"v", "version"}, "Show the version and exit.");
    const QCommandLineOption select("select", "Tick PATH in the module tree once the model is open.", "PATH");
    const QCommandLineOption screenshot("screenshot",
        "Wait for the first run (and the sweep or Grad-CAM asked for), write the window to FILE.png and exit.",
        "FILE.png");
    const QCommandLineOption probeData(
        "probe-data", "The Probes tab's labelled folder (one subfolder per class).", "DIR");
    const QCommandLineOption sweep(
        "sweep", "Tick these layers and train a probe on each (needs --probe-data).", "LAYER,LAYER,...");
    const QCommandLineOption sweepPlot(
        "sweep-plot", "Write the sweep's accuracy-by-layer plot when it ends.", "FILE.png");
    const QCommandLineOption gradCam(
        "gradcam", "Show Grad-CAM of LAYER for the selected image after the first run.", "LAYER");
    const QCommandLineOption setup(
        "setup", "An input setup (as torchscope-cli --preprocess) for the model.", "SETUP.json");
    const QCommandLineOption labels(
        "labels", "Class names for the model's outputs (one per line, or JSON).", "LABELS.txt");
    const QCommandLineOption compareData(
        "compare-data", "Run the Compare tab on this image folder once the model is open.", "DIR");
    const QCommandLineOption compareWith("compare-with", "The Compare tab's model B.", "B.pt");
    const QCommandLineOption compareMode("compare-mode",
        "cka, checkpoints or precision (default: checkpoints with --compare-with, else precision).", "MODE");
    const QCommandLineOption compareLayers(
        "compare-layers", "The layers to compare (specs, comma-separated).", "SPECS");
    const QCommandLineOption record(
        "record", "Record the ticked layers over this image folder (Recorders tab, stats).", "DIR");
    const QCommandLineOption channelPage("channel-page",
        "Open the page of this channel (feature visualisation, top images of --record); with --screenshot, "
        "write the page.",
        "LAYER:CHANNEL");
    parser.addOptions({help, version, select, screenshot, probeData, sweep, sweepPlot, gradCam, setup, labels,
        compareData, compareWith, compareMode, compareLayers, record, channelPage});
    parser.addPositionalArgument("files",
        "A model (.pt or .pt2), images, image folders or a session (.torchscope.json).", "[MODEL] [IMAGES|FOLDERS...]");

    GuiOptions options;
    if (!parser.parse(arguments)) {
        options.error = parser.errorText();
        return options;
    }
    if (parser.isSet(help)) {
        options.helpText = parser.helpText();
        return options;
    }
    if (parser.isSet(version)) {
        options.versionText
            = QString("torchscope %1 (Qt %2)\n").arg(QCoreApplication::applicationVersion(), qVersion());
        return options;
    }
    options.files = parser.positionalArguments();
    options.select = parser.value(select);
    options.screenshot = parser.value(screenshot);
    options.probeData = parser.value(probeData);
    options.sweep = parser.value(sweep).split(',', Qt::SkipEmptyParts);
    options.sweepPlot = parser.value(sweepPlot);
    options.gradCam = parser.value(gradCam);
    options.setup = parser.value(setup);
    options.labels = parser.value(labels);
    options.compareData = parser.value(compareData);
    options.compareWith = parser.value(compareWith);
    options.compareLayers = parser.value(compareLayers);
    options.compareMode = parser.isSet(compareMode) ? parser.value(compareMode)
                                                    : (options.compareWith.isEmpty() ? "precision" : "checkpoints");
    if (!QStringList{"cka", "checkpoints", "precision"}.contains(options.compareMode))
        options.error = "--compare-mode: expected cka, checkpoints or precision, got '" + options.compareMode + "'";
    if (options.compareData.isEmpty()
        && (parser.isSet(compareWith) || parser.isSet(compareMode) || parser.isSet(compareLayers)))
        options.error = "--compare-with, --compare-mode and --compare-layers need --compare-data DIR";
    options.record = parser.value(record);
    if (parser.isSet(channelPage)) {
        const QString spec = parser.value(channelPage);
        const auto colon = spec.lastIndexOf(':');
        bool number = false;
        options.channelPageChannel = colon > 0 ? spec.mid(colon + 1).toInt(&number) : -1;
        options.channelPageLayer = spec.left(colon);
        if (!number || options.channelPageChannel < 0)
            options.error = "--channel-page: expected LAYER:CHANNEL (a channel number, 0 or more), got '" + spec + "'";
    }
    if (!options.sweep.isEmpty() && options.probeData.isEmpty())
        options.error = "--sweep needs --probe-data DIR (one subfolder per class)";
    if (options.files.isEmpty()) {
        // The bundled demo as scripts/demo.sh opens it: its second dense block ticked and its
        // Grad-CAM shown, unless the command line picks a layer itself.
        options.files = bundledDemoFiles();
        if (options.select.isEmpty() && options.gradCam.isEmpty())
            options.select = options.gradCam = "features.dense2";
    }
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
