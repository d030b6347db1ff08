#pragma once

// What every analysis is (docs/architecture.md, "Analyses"): one core operation, a request in and a
// result out, run on models it asks for by key, reporting through one progress callback that can
// cancel. Each analysis is a type in the room named for it:
//
//     struct GradCamAnalysis {
//         using Request = GradCamRequest;
//         using Result = GradCamResult;
//         static constexpr const char* name = "gradcam"; // its row in analysisTable()
//         static Result run(AnalysisContext& context, const Request& request);
//     };
//
// The window's job runner (ui/jobs), the CLI's commands (app/cli) and the tests all reach it the
// same way, so a result seen in the window is the one the command line writes. No Torch here.

#include "common/progress.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace torchscope {

class Engine;
class Model;

// Where the window runs an analysis: the interactive lane (short work on the open model; a newer
// request supersedes) or the batch lane (long work beside it).
enum class AnalysisLane { Interactive, Batch };

// A model as an analysis asks for it.
struct ModelKey {
    std::string path;
    std::string device = "cpu";
    std::string dtype; // "" : as saved
    std::vector<std::string> operatorLibraries; // loaded before the model
    bool operator==(const ModelKey& other) const
    {
        return path == other.path && device == other.device && dtype == other.dtype;
    }
};

// The models an analysis runs on, kept by its front end: the window's cache (one instance per
// lane, ui/jobs/model_cache.h), the CLI's model opened once. Throws torchscope::Error naming what is
// wrong with a file.
class ModelSource {
public:
    virtual ~ModelSource() = default;
    virtual std::shared_ptr<Model> model(const ModelKey& key) = 0;
    virtual std::shared_ptr<Engine> engine(const ModelKey& key) = 0;
    // A copy of the analysis's own, which it may change (the sanity check randomises its layers):
    // loaded afresh from the file.
    virtual std::shared_ptr<Model> copy(const ModelKey& key);
};

// A ModelSource that loads each key once and keeps it: the CLI's and the tests'.
class LoadedModels : public ModelSource {
public:
    LoadedModels();
    ~LoadedModels() override;
    // The model already opened under `key` (the CLI opens it first to choose its setup).
    void add(const ModelKey& key, std::shared_ptr<Model> model);
    std::shared_ptr<Model> model(const ModelKey& key) override;
    std::shared_ptr<Engine> engine(const ModelKey& key) override;

private:
    struct Entry;
    std::vector<std::unique_ptr<Entry>> entries_;
};

// Everything an analysis sees beside its request.
struct AnalysisContext {
    ModelSource& models;
    ModelKey model; // the model it is asked about (the window's open model)
    ProgressCallback progress; // may be empty
    std::function<bool()> cancelled; // whether a cancel was asked for, without reporting; may be empty
    // A part of the result, handed to the front end before the job ends (as QPromise::addResult
    // does): the analysis's header names its parts' type (the attribution workbench: one image's
    // maps). May be empty; the window posts each part to the panel that started the job.
    std::function<void(std::shared_ptr<const void> part)> partial;
    template <typename Part> void deliver(const Part& part) const
    {
        if (partial)
            partial(std::make_shared<const Part>(part));
    }
    bool reportProgress(const Progress& p) const { return !progress || progress(p); }
    bool isCancelled() const { return cancelled && cancelled(); }
};

} // namespace torchscope
