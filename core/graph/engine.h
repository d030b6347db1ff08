#pragma once

// Runs requests against a loaded model. Includes ATen's IValue: for core/*.cpp, the CLI and
// tests; the UI talks to it through its worker's translation unit only.

#include "graph/request.h"

#include <ATen/core/ivalue.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace torchscope {

class Model;
struct InstrumentedFunction;
struct ResolvedRequest;

struct RunResult {
    // "output" first (the truncation point's output when truncating), then every capture under
    // the CLI's key scheme: PATH, PATH#1 ... for later calls, PATH:in0, PATH:grad.
    std::vector<std::pair<std::string, c10::IValue>> values;
    std::vector<std::string> warnings;
    RelevanceCoverage relevance; // a relevance run's rules as applied (Request::relevance)
    // With gradients: what they are of ("class 3 (cat)", "detection 0 (person, score 0.93)").
    std::string target;
    int64_t targetIndex = -1;

    const c10::IValue* find(const std::string& key) const;
    at::Tensor tensor(const std::string& key) const; // throws torchscope::Error if missing
};

// Builds (and caches, per request) instrumented graph functions for one model and runs them.
// Not thread-safe: use one Engine per thread, and never run one model from two threads at once
// (some models, Mask R-CNN among them, change module attributes during forward).
class Engine {
public:
    explicit Engine(std::shared_ptr<Model> model);
    ~Engine();

    // inputs: one per forward argument (missing trailing arguments take their defaults).
    // editTensors: each edit's (EditSpec::tensorCount), in the order of request.edits.
    RunResult run(const Request& request, const std::vector<c10::IValue>& inputs,
        const std::vector<at::Tensor>& editTensors = {});

    // A run whose grabbed values keep their autograd graph back to the inputs as given (no copies):
    // the caller differentiates what it likes, as activation maximisation does with respect to
    // an image. No gradient grabs.
    RunResult runWithGraph(const Request& request, const std::vector<c10::IValue>& inputs);

    ResolvedRequest resolve(const Request& request) const;
    // Resolves and builds the request's graph without running it, so that errors of the request
    // itself (unknown path, truncation inside a loop) surface before any input is read.
    void prepare(const Request& request);
    const Model& model() const { return *model_; }
    size_t cachedGraphs() const { return cache_.size(); }

private:
    RunResult execute(const Request& request, const std::vector<c10::IValue>& inputs,
        const std::vector<at::Tensor>& editTensors, bool keepGraph);
    std::shared_ptr<InstrumentedFunction> instrumented(const ResolvedRequest& request);

    std::shared_ptr<Model> model_;
    std::map<std::string, std::shared_ptr<InstrumentedFunction>> cache_;
};

// Turns a batch tensor into the forward's arguments: as it is for a Tensor argument, split into
// a list of images for a List[Tensor] argument (detection models).
std::vector<c10::IValue> forwardInputsFromBatch(const Model& model, const at::Tensor& batch);

// Runs every module once on `inputs` and stores each call's output shape in the model's tree.
void dryRun(Model& model, const std::vector<c10::IValue>& inputs);

// The modules a truncation at `truncateAt` cuts away: those that run in the whole forward (after a
// dry run) but not in the truncated one, the truncation point's ancestors (cut short, not away)
// left out. Runs the truncated forward once on `inputs`.
std::vector<std::string> modulesCutAway(
    Model& model, const std::vector<c10::IValue>& inputs, const std::string& truncateAt);

// The short message of an error raised inside TorchScript code, without its traceback.
std::string torchErrorMessage(const std::string& what);

} // namespace torchscope
