#pragma once

// Graph surgery: builds a new graph function from a model's forward that also returns the values
// a request asks for. Includes Torch; used by graph/engine.cpp and the benchmark only.

#include "graph/request.h"
#include "relevance/relevance_graph.h"

#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/api/module.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace torchscope {

// One value taken at every call of one module. Output i + 1 of the instrumented function is the
// list of what each call gave, in execution order (call 0, 1, 2 ...).
struct CaptureSlot {
    std::string key; // "layer1", "layer1:in0", "layer1:grad"
    std::string path;
    CaptureKind kind = CaptureKind::Output;
    int inputIndex = 0;
};

// A request with its selectors resolved to paths; its key identifies the graph it builds.
struct ResolvedRequest {
    std::vector<CaptureSlot> captures;
    std::optional<std::string> truncateAt;
    std::vector<EditSpec> edits;
    std::vector<std::string> notes; // what the selectors skipped (modules that never run)
    bool attentionInPath = false; // Request::attentionInPath
    std::optional<RelevanceSettings> relevance; // Request::relevance
    bool grabsOnPath = false; // Request::grabsOnPath
    std::vector<ResolvedRuleOverride> ruleOverrides; // its overrides, resolved to paths

    bool needsGradients() const;
    std::string cacheKey() const;
};

struct InstrumentedFunction {
    std::shared_ptr<torch::jit::GraphFunction> function;
    std::vector<CaptureSlot> slots;
    std::vector<std::string> warnings;
    RelevanceCoverage relevance; // with ResolvedRequest::relevance: the rules as applied
};

// Copies forward's graph, inlines only the prim::CallMethod calls on the way to each requested
// module, taps the calls of those modules, applies edits and cuts the graph at the truncation
// point. A module whose attention is grabbed is inlined itself, with the functions it calls, and
// its attention tapped (graph/attention_taps.h). The module itself is left untouched. Throws
// torchscope::Error.
std::shared_ptr<InstrumentedFunction> instrument(const torch::jit::Module& module, const ResolvedRequest& request);

// Replaces a prim::CallMethod on the module at `path` by the method's own graph (its submodule
// calls stay calls). Throws torchscope::Error for a call through an interface type.
void inlineModuleCall(torch::jit::Node* call, const std::string& path);

} // namespace torchscope
