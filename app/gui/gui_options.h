#pragma once

#include <QString>
#include <QStringList>

// torchscope [MODEL] [IMAGES... | FOLDERS...] [--select PATH] [--screenshot FILE.png]
//            [--probe-data DIR] [--sweep LAYER,LAYER,...] [--sweep-plot FILE.png] [--gradcam LAYER]
//            [--setup SETUP.json] [--labels LABELS.txt]
//            [--compare-data DIR [--compare-with B.pt] [--compare-mode MODE] [--compare-layers SPECS]]
//            [--record DIR] [--channel-page LAYER:CHANNEL]
struct GuiOptions {
    QStringList files; // models, images, folders, sessions; empty: the bundled face-expression demo
    QString select;
    QString screenshot;
    QString probeData; // the Probes panel's labelled folder
    QStringList sweep; // layers ticked and swept once the model is open
    QString sweepPlot; // where the accuracy-by-layer plot is written when the sweep ends
    QString gradCam; // a layer: shows Grad-CAM of the selected image for it after the first run
    QString setup; // an input setup JSON (as torchscope-cli --preprocess) applied once the model is open
    QString labels; // a labels file (one per line, or JSON) for the model's classes
    QString compareData; // a folder: the Compare tab runs on it once the model is open
    QString compareWith; // model B
    QString compareMode; // cka, checkpoints or precision
    QString compareLayers; // specs, comma-separated
    QString record; // a folder: the Recorders tab records the ticked layers over it once the model is open
    QString channelPageLayer; // --channel-page: opened once the model is open (and the recording done)
    int channelPageChannel = -1;
    QString error; // a usage error to print
    QString helpText; // --help: print and exit
    QString versionText; // --version: print and exit
};

GuiOptions parseGuiOptions(const QStringList& arguments);
QStringList bundledDemoFiles();
