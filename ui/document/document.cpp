#include "document/document.h"

#include "document/capture_keys.h"

#include <QDir>
#include <QFileInfo>

#include <algorithm>
#include <stdexcept>

namespace torchscope {

Document::Document(QObject* parent)
    : QObject(parent)
{ }

void Document::setModel(const ModelSummary& model)
{
    const bool sameModel = model.path == model_.path;
    model_ = model;
    probeAccuracies_.clear(); // probes belong to the weights they were trained on
    bestProbeLayer_.clear();
    if (!sameModel) {
        grabs_.clear();
        truncation_.clear();
        edits_.clear();
        selectedKey_.clear();
        targetClass_ = -1;
        snapshot_.reset();
        running_.reset();
        setup_ = model.setup;
        setupSource_ = model.hasStoredSetup ? tr("stored in the model") : tr("ImageNet default, not checked");
    }
    Q_EMIT modelChanged();
    Q_EMIT setupChanged();
    Q_EMIT probesChanged();
    Q_EMIT selectionChanged();
    Q_EMIT resultsChanged();
    Q_EMIT requestChanged();
}

void Document::updateModules(const std::vector<ModuleInfo>& modules)
{
    if (modules.size() != model_.modules.size())
        return;
    model_.modules = modules;
    Q_EMIT modulesChanged();
}

const ModuleInfo* Document::module(const QString& path) const
{
    if (path.isEmpty())
        return nullptr;
    const std::string wanted = path.toStdString();
    for (const auto& m : model_.modules)
        if (m.path == wanted)
            return &m;
    return nullptr;
}

bool Document::setGrabbed(const QString& spec, bool grabbed)
{
    if (grabbed == grabs_.contains(spec))
        return true;
    if (const ModuleInfo* m = module(spec.section(':', 0, 0)); grabbed && m && !m->called)
        return false;
    if (grabbed) {
        // Show the new grab unless the selection still shows one of the others.
        const bool selectionGrabbed = grabs_.contains(grabOf(selectedKey_));
        grabs_ << spec;
        if (!selectionGrabbed)
            selectedKey_ = spec;
    } else {
        grabs_.removeAll(spec);
        if (selectedKey_ == spec)
            selectedKey_ = grabs_.isEmpty() ? QString() : grabs_.first();
    }
    Q_EMIT requestChanged();
    Q_EMIT selectionChanged();
    return true;
}

void Document::setTruncation(const QString& path)
{
    if (path == truncation_)
        return;
    truncation_ = path;
    Q_EMIT requestChanged();
}

void Document::addEdit(const EditSpec& edit)
{
    edits_.push_back(edit);
    Q_EMIT requestChanged();
}

void Document::clearEdits(const QString& path)
{
    const auto before = edits_.size();
    edits_.erase(std::remove_if(edits_.begin(), edits_.end(),
                     [&](const EditSpec& e) { return path.isEmpty() || e.path == path.toStdString(); }),
        edits_.end());
    if (edits_.size() != before)
        Q_EMIT requestChanged();
}

void Document::clearEdits(const QString& path, EditKind kind)
{
    const auto before = edits_.size();
    edits_.erase(std::remove_if(edits_.begin(), edits_.end(),
                     [&](const EditSpec& e) { return e.kind == kind && e.path == path.toStdString(); }),
        edits_.end());
    if (edits_.size() != before)
        Q_EMIT requestChanged();
}

void Document::addImages(const QStringList& paths)
{
    bool added = false;
    for (const auto& path : paths) {
        const QString absolute = QFileInfo(path).absoluteFilePath();
        if (!images_.contains(absolute)) {
            images_ << absolute;
            added = true;
        }
    }
    if (!added)
        return;
    Q_EMIT imagesChanged();
    Q_EMIT requestChanged();
}

void Document::removeImages(const QStringList& paths)
{
    const qsizetype before = images_.size();
    const QString selected = images_.value(selectedImage_);
    for (const auto& path : paths)
        images_.removeAll(path);
    if (images_.size() == before)
        return;
    const qsizetype kept = images_.indexOf(selected);
    selectedImage_ = static_cast<int>(
        kept >= 0 ? kept : std::min<qsizetype>(selectedImage_, std::max<qsizetype>(0, images_.size() - 1)));
    if (snapshot_) {
        // Results of the removed images go at once; the next run brings the statistics up to date.
        auto filtered = std::make_shared<RunJobResult>(*snapshot_);
        const auto gone = [&](const std::string& path) { return !images_.contains(QString::fromStdString(path)); };
        filtered->images.erase(std::remove_if(filtered->images.begin(), filtered->images.end(),
                                   [&](const ImageResult& image) { return gone(image.path); }),
            filtered->images.end());
        filtered->failures.erase(std::remove_if(filtered->failures.begin(), filtered->failures.end(),
                                     [&](const auto& failure) { return gone(failure.first); }),
            filtered->failures.end());
        snapshot_ = filtered;
    }
    Q_EMIT imagesChanged();
    Q_EMIT selectionChanged();
    Q_EMIT resultsChanged();
    Q_EMIT requestChanged();
}

QString Document::imageFailure(int index) const
{
    if (!snapshot_ || index < 0 || index >= images_.size())
        return {};
    const std::string path = images_[index].toStdString();
    for (const auto& [failed, why] : snapshot_->failures)
        if (failed == path)
            return QString::fromStdString(why);
    return {};
}

void Document::clearImages()
{
    images_.clear();
    selectedImage_ = 0;
    snapshot_.reset();
    running_.reset();
    Q_EMIT imagesChanged();
    Q_EMIT requestChanged();
    Q_EMIT resultsChanged();
}

void Document::setTargetClass(int target)
{
    if (target == targetClass_)
        return;
    targetClass_ = target;
    bool usesGradients = false;
    for (const auto& g : grabs_)
        usesGradients = usesGradients || isGradientKey(g);
    if (usesGradients)
        Q_EMIT requestChanged();
}

void Document::setSetup(const ModelSetup& setup, const QString& source)
{
    setupSource_ = source;
    if (setup == setup_) {
        Q_EMIT setupChanged();
        return;
    }
    setup_ = setup;
    Q_EMIT setupChanged();
    Q_EMIT requestChanged();
}

void Document::setSelectedKey(const QString& key)
{
    if (key == selectedKey_)
        return;
    selectedKey_ = key;
    Q_EMIT selectionChanged();
}

void Document::setSelectedImage(int index)
{
    if (index == selectedImage_)
        return;
    selectedImage_ = index;
    Q_EMIT selectionChanged();
}

void Document::setSelectedChannel(int channel)
{
    if (channel == selectedChannel_)
        return;
    selectedChannel_ = channel;
    Q_EMIT channelSelected(channel);
}

void Document::addRunningResult(int generation, const ImageResult& image, int total)
{
    if (!running_ || runningGeneration_ != generation) {
        running_ = std::make_shared<RunJobResult>();
        running_->generation = generation;
        running_->requestedImages = total;
        // Appended in place on this thread: reserved, so that a view's pointer to an earlier
        // image's result stays valid while later ones arrive.
        running_->images.reserve(static_cast<size_t>(total));
        runningGeneration_ = generation;
    }
    if (running_->images.size() >= running_->images.capacity())
        return; // more than announced: the whole result will bring it
    running_->images.push_back(image);
    snapshot_ = running_;
    // Only the selected image is on screen: other images' results wait in the snapshot until they
    // are selected (selectionChanged shows them), so a long run does not redraw every view per image.
    if (images_.value(selectedImage_).toStdString() == image.path)
        Q_EMIT resultsChanged();
}

void Document::setRunProgress(int done, int total)
{
    if (done == runDone_ && total == runTotal_)
        return;
    runDone_ = done;
    runTotal_ = total;
    if (!selectedResult())
        Q_EMIT resultsChanged(); // "running n of N" where the selected image has no result yet
}

void Document::setSnapshot(const RunJobResultPtr& snapshot)
{
    running_.reset();
    runningGeneration_ = -1;
    runDone_ = runTotal_ = 0;
    snapshot_ = snapshot;
    if (snapshot && !snapshot->modules.empty())
        updateModules(snapshot->modules);
    Q_EMIT resultsChanged();
}

const ImageResult* Document::selectedResult() const
{
    if (!snapshot_ || selectedImage_ < 0 || selectedImage_ >= static_cast<int>(images_.size()))
        return nullptr;
    // Failed images leave gaps: find the result of the selected path.
    const std::string path = images_[selectedImage_].toStdString();
    for (const auto& image : snapshot_->images)
        if (image.path == path)
            return &image;
    return nullptr;
}

void Document::setProbeResults(const QMap<QString, double>& accuracies, const QString& bestLayer)
{
    for (auto it = accuracies.begin(); it != accuracies.end(); ++it)
        probeAccuracies_[it.key()] = it.value();
    bestProbeLayer_ = bestLayer;
    Q_EMIT probesChanged();
}

RunRequest Document::makeRunRequest(int generation) const
{
    RunRequest run;
    run.generation = generation;
    for (const auto& image : images_)
        run.images.push_back(image.toStdString());
    for (const auto& spec : grabs_)
        run.request.grabs.push_back(GrabSpec::parse(spec.toStdString()));
    if (!truncation_.isEmpty())
        run.request.truncateAt = truncation_.toStdString();
    run.request.edits = edits_;
    run.request.targetClass = targetClass_;
    run.request.scores = setup_.scores;
    run.request.labels = setup_.labels;
    run.setup = setup_;
    run.firstImage = selectedImage_; // the image on screen: its result comes first
    return run;
}

SessionFile Document::toSession() const
{
    SessionFile session;
    session.model = modelPath().toStdString();
    session.device = device_.toStdString();
    for (const auto& grab : grabs_)
        session.grabs.push_back(grab.toStdString());
    session.truncate = truncation_.toStdString();
    session.edits = edits_;
    session.setup = setup_;
    session.target = targetClass_;
    session.selectedLayer = selectedKey_.toStdString();
    for (const auto& image : images_)
        session.images.push_back(image.toStdString());
    session.selectedImage = selectedImage_;
    return session;
}

void Document::applySession(const SessionFile& session)
{
    grabs_.clear();
    for (const auto& grab : session.grabs)
        grabs_ << QString::fromStdString(grab);
    edits_ = session.edits;
    truncation_ = QString::fromStdString(session.truncate);
    if (session.setup && *session.setup != setup_) {
        setup_ = *session.setup;
        setupSource_ = tr("from the session");
    }
    targetClass_ = static_cast<int>(session.target);
    selectedKey_ = QString::fromStdString(session.selectedLayer);
    images_.clear();
    for (const auto& image : session.images)
        images_ << QString::fromStdString(image);
    selectedImage_
        = static_cast<int>(std::min<int64_t>(session.selectedImage, std::max<qsizetype>(0, images_.size() - 1)));
    snapshot_.reset();
    running_.reset();
    Q_EMIT setupChanged();
    Q_EMIT imagesChanged();
    Q_EMIT selectionChanged();
    Q_EMIT requestChanged();
    Q_EMIT resultsChanged();
}

} // namespace torchscope
