#pragma once

#include "jobs/run_types.h"
#include "session/session_file.h"

#include <QMap>
#include <QObject>
#include <QSet>
#include <QString>
#include <QStringList>

namespace torchscope {

// The open session (Tiled's Document): the model, what to grab, the truncation point, the edits,
// the images, the selection and the last results. Views subscribe to its signals; every change
// to what the model should compute emits requestChanged(), which the RunController turns into a
// run on the worker thread.
class Document : public QObject {
    Q_OBJECT
public:
    explicit Document(QObject* parent = nullptr);

    bool hasModel() const { return !model_.path.empty(); }
    const ModelSummary& model() const { return model_; }
    QString modelPath() const { return QString::fromStdString(model_.path); }
    // A model at another path starts afresh: its setup (stored, else the default), no grabs,
    // truncation, edits, results, probes or selection of the old one. The same path (opened again
    // on another device) keeps everything.
    void setModel(const ModelSummary& model);
    void updateModules(const std::vector<ModuleInfo>& modules); // output shapes after a dry run
    const ModuleInfo* module(const QString& path) const;

    // Grabs as CLI specs: "layer1" (output), "layer1:in0", "layer1:grad".
    QStringList grabs() const { return grabs_; }
    bool isGrabbed(const QString& spec) const { return grabs_.contains(spec); }
    // False, and nothing changes, for a grab of a module that never runs in this model (the tree
    // greys it with the reason): it has no value, whoever asks (the tree, --select, a session).
    bool setGrabbed(const QString& spec, bool grabbed);

    QString truncation() const { return truncation_; }
    void setTruncation(const QString& path); // empty: none

    const std::vector<EditSpec>& edits() const { return edits_; }
    void addEdit(const EditSpec& edit);
    void clearEdits(const QString& path); // empty: all
    void clearEdits(const QString& path, EditKind kind); // only those of that kind at the path

    QStringList images() const { return images_; }
    void addImages(const QStringList& paths); // keeps order, skips duplicates
    void clearImages();
    // Removes these images and their results (the statistics over the rest are then run again).
    void removeImages(const QStringList& paths);
    // Why the image at this index could not be read in the last run ("" if it could).
    QString imageFailure(int index) const;

    int targetClass() const { return targetClass_; } // -1: the predicted class
    void setTargetClass(int target);

    QString device() const { return device_; }
    void setDevice(const QString& device) { device_ = device; }

    // How the model's input is made and its output read (model/model_setup.h), and where that
    // came from, for the status bar: "stored in the model", "ImageNet default", "set by you" ...
    const ModelSetup& setup() const { return setup_; }
    QString setupSource() const { return setupSource_; }
    void setSetup(const ModelSetup& setup, const QString& source);
    const Preprocessing& preprocessing() const { return setup_.preprocessing; }

    QString selectedKey() const { return selectedKey_; }
    void setSelectedKey(const QString& key);
    int selectedImage() const { return selectedImage_; }
    void setSelectedImage(int index);
    // The channel picked in any view (grid, statistics plots, recorders): the others follow.
    int selectedChannel() const { return selectedChannel_; }
    void setSelectedChannel(int channel);

    RunJobResultPtr snapshot() const { return snapshot_; }
    void setSnapshot(const RunJobResultPtr& snapshot);
    // While a run goes on: each image's result as it arrives (the run of `generation`, which
    // replaces the last run's results with its first image; resultsChanged when it is the selected
    // image's), and how far it has come. setSnapshot with the whole run ends it.
    void addRunningResult(int generation, const ImageResult& image, int total);
    void setRunProgress(int done, int total); // total 0: no run going on
    bool isRunning() const { return runTotal_ > 0; }
    int runDone() const { return runDone_; }
    int runTotal() const { return runTotal_; }
    const ImageResult* selectedResult() const;

    RunRequest makeRunRequest(int generation) const;

    // Validation accuracy of the last probes trained per layer, and the best layer of the last
    // sweep: the module tree marks them.
    QMap<QString, double> probeAccuracies() const { return probeAccuracies_; }
    QString bestProbeLayer() const { return bestProbeLayer_; }
    void setProbeResults(const QMap<QString, double>& accuracies, const QString& bestLayer);

    SessionFile toSession() const;
    // Restores everything but the model itself (the caller opens it first), the setup among it.
    void applySession(const SessionFile& session);

Q_SIGNALS:
    void modelChanged();
    void modulesChanged();
    void requestChanged();
    void setupChanged();
    void imagesChanged();
    void selectionChanged();
    void channelSelected(int channel);
    void resultsChanged();
    void probesChanged();

private:
    ModelSummary model_;
    QStringList grabs_;
    QString truncation_;
    std::vector<EditSpec> edits_;
    QStringList images_;
    int targetClass_ = -1;
    QString device_ = "cpu";
    ModelSetup setup_;
    QString setupSource_;
    QString selectedKey_;
    int selectedImage_ = 0;
    int selectedChannel_ = -1;
    RunJobResultPtr snapshot_;
    std::shared_ptr<RunJobResult> running_; // snapshot_ while a run's images arrive
    int runningGeneration_ = -1;
    int runDone_ = 0;
    int runTotal_ = 0;
    QMap<QString, double> probeAccuracies_;
    QString bestProbeLayer_;
};

} // namespace torchscope
