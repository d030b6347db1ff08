#include "document.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>

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

void Document::setGrabbed(const QString& spec, bool grabbed)
{
    if (grabbed == grabs_.contains(spec))
        return;
    if (grabbed) {
        // Show the new grab unless the selection still shows one of the others.
        const bool selectionGrabbed = grabs_.contains(selectedKey_.section('#', 0, 0));
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

void Document::clearImages()
{
    images_.clear();
    selectedImage_ = 0;
    snapshot_.reset();
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
        usesGradients = usesGradients || g.endsWith(":grad");
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

void Document::setSnapshot(const RunSnapshotPtr& snapshot)
{
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
    return run;
}

QJsonObject Document::toJson() const
{
    QJsonArray edits;
    for (const auto& e : edits_)
        edits.append(QString::fromStdString(e.toString()));
    return QJsonObject{
        {"format", "torchscope-session"},
        {"version", 2},
        {"model", modelPath()},
        {"device", device_},
        {"grabs", QJsonArray::fromStringList(grabs_)},
        {"truncate", truncation_},
        {"edits", edits},
        {"images", QJsonArray::fromStringList(images_)},
        {"setup", QJsonDocument::fromJson(QByteArray::fromStdString(setup_.toJson())).object()},
        {"target", targetClass_},
        {"selected_layer", selectedKey_},
        {"selected_image", selectedImage_},
    };
}

void Document::applyJson(const QJsonObject& session)
{
    if (session.value("format").toString() != "torchscope-session")
        throw std::runtime_error("this is not a TorchScope session file (no \"format\": \"torchscope-session\")");
    QStringList grabs;
    for (const auto& g : session.value("grabs").toArray())
        grabs << g.toString();
    std::vector<EditSpec> edits;
    for (const auto& e : session.value("edits").toArray())
        edits.push_back(EditSpec::parse(e.toString().toStdString()));
    ModelSetup setup = setup_;
    try {
        if (session.value("setup").isObject())
            setup = ModelSetup::fromJson(
                QJsonDocument(session.value("setup").toObject()).toJson(QJsonDocument::Compact).toStdString(),
                setup_);
        else if (const QString spec = session.value("preprocess").toString(); !spec.isEmpty())
            setup = readSetupSpec(spec.toStdString(), setup_); // sessions of version 1
    } catch (const std::exception& e) {
        throw std::runtime_error(std::string("the session's input setup: ") + e.what());
    }
    grabs_ = grabs;
    edits_ = edits;
    truncation_ = session.value("truncate").toString();
    if (setup != setup_) {
        setup_ = setup;
        setupSource_ = tr("from the session");
    }
    targetClass_ = session.value("target").toInt(-1);
    selectedKey_ = session.value("selected_layer").toString();
    images_.clear();
    for (const auto& i : session.value("images").toArray())
        images_ << i.toString();
    selectedImage_ = session.value("selected_image").toInt(0);
    snapshot_.reset();
    Q_EMIT setupChanged();
    Q_EMIT imagesChanged();
    Q_EMIT selectionChanged();
    Q_EMIT requestChanged();
    Q_EMIT resultsChanged();
}

} // namespace torchscope
