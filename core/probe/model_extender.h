#pragma once

// hybrid_learning's ModelExtender and ExtendedModelStump for a TorchScript model: extension
// modules (probes) attached by name to module paths, run on those modules' outputs.

#include "graph/engine.h"

#include <ATen/core/Tensor.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace torch::jit {
struct Module;
}

namespace torchscope {

class Model;
struct ProbeExtension;

struct ExtendedOutput {
    std::optional<c10::IValue> main; // the model's output; empty when return_orig_out is off
    std::map<std::string, at::Tensor> extensions; // name -> the extension's output
    RunResult run; // the run itself: every grab (the extended layers among them) and its warnings
};

class ModelExtender {
public:
    explicit ModelExtender(std::shared_ptr<Model> model);
    ~ModelExtender();

    // Names are unique across all layers. Throws torchscope::Error for a duplicate name or an
    // unknown module path (naming the closest paths).
    void registerExtension(
        const std::string& modulePath, const std::string& name, std::shared_ptr<torch::jit::Module> extension);
    // A loaded probe on its own layer, or on `modulePath` when given.
    void registerProbe(const std::string& name, const ProbeExtension& probe, const std::string& modulePath = {});
    // Throws torchscope::Error for a name that is not registered, listing the registered ones.
    void unregisterExtension(const std::string& name);

    // {module path: [names]} and {module path: {name: extension}}, as hybrid_learning shows them.
    std::map<std::string, std::vector<std::string>> nameRegistrations() const;
    std::map<std::string, std::map<std::string, std::shared_ptr<torch::jit::Module>>> extensions() const;

    // The main output and every extension's output on the module's output (its last call's when
    // called several times). Without the main output (returnOrigOut false), the graph stops after
    // the last module an extension reads (the stump): the rest of the network is not computed.
    // `request` adds grabs, edits (with `editTensors`, as Engine::run takes them) and a truncation
    // point of its own.
    ExtendedOutput forward(const std::vector<c10::IValue>& inputs, bool returnOrigOut = true,
        const Request& request = {}, const std::vector<at::Tensor>& editTensors = {});

    // Where the stump ends for the current registrations; empty when it cannot be cut.
    std::optional<std::string> stumpEnd();

    Engine& engine() { return engine_; }

private:
    struct Registration {
        std::string path;
        std::string name;
        std::shared_ptr<torch::jit::Module> module;
    };
    std::vector<std::string> registeredPaths() const; // each once, in registration order

    std::shared_ptr<Model> model_;
    Engine engine_;
    std::vector<Registration> registrations_;
    std::optional<std::optional<std::string>> stumpEnd_; // cached per registration set
};

// The module of `paths` whose output comes last in a forward pass, judged from the module tree
// (an ancestor ends after its children); the engine confirms it by a trial when it matters.
std::optional<std::string> lastModuleOf(const Model& model, const std::vector<std::string>& paths);

// Runs `request` with the outputs of `paths` grabbed and, unless the request has a truncation
// point of its own, the forward cut after the last of them (ExtendedModelStump). When the cut
// would lose one of them (a module called after the one the tree puts last), it runs the whole
// forward instead. `cut` caches the decision between calls (fill it with nothing first).
RunResult runStump(Engine& engine, Request request, const std::vector<std::string>& paths,
    const std::vector<c10::IValue>& inputs, const std::vector<at::Tensor>& editTensors,
    std::optional<std::optional<std::string>>& cut);

// The last call's output of `path` in a run ("PATH", "PATH#1", ...): what an extension reads.
// Throws torchscope::Error when the run did not reach it or it is not a tensor.
at::Tensor lastCallOutput(const RunResult& result, const std::string& path);

// Runs an extension module on a tensor; its errors become torchscope::Error naming it.
at::Tensor runExtension(torch::jit::Module& extension, const std::string& name, const at::Tensor& input);

} // namespace torchscope
