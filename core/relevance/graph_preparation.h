#pragma once

// The graph the relevance rewrite (relevance_graph.h) works on, made ready and read: every module
// and function call inlined with each op's module kept, the module's constant numbers, flags and
// names folded so that branches it rules out are gone, and the two sets the rules need — the values
// the input's relevance reaches and the values the output is computed from. Includes Torch: for
// relevance_graph.cpp only.

#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/ir.h>

#include <initializer_list>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace torchscope::relevance {

bool isOp(const torch::jit::Node* node, std::initializer_list<const char*> names);
bool isTensor(const torch::jit::Value* value);
bool holdsTensors(const c10::TypePtr& type);

// Every module and function call inlined, each op remembering the module it came from.
class Inliner {
public:
    void run(torch::jit::Graph& graph);
    void tag(const torch::jit::Node* node, const std::string& path) { paths_[node] = path; }
    // The module an op came from ("" for the model's own forward).
    std::string pathOf(const torch::jit::Node* node) const;

private:
    std::unordered_map<const torch::jit::Node*, std::string> paths_;
};

// The submodule of `module` at a dotted path ("" is the module), or nullopt.
std::optional<torch::jit::Module> moduleAt(const torch::jit::Module& module, const std::string& path);

// Inlines `graph` (the forward of `module`), folds the module's numbers, flags and names (not its
// tensors, nor `training`) as the constants they are where the forward never assigns them, and
// takes away the branches that leaves dead (timm's pooling by name, nn.MultiheadAttention's separate
// projections, `if bias is None` on a module that has one).
void prepareGraph(torch::jit::Graph& graph, const torch::jit::Module& module, Inliner& inliner);

using ValueSet = std::unordered_set<const torch::jit::Value*>;

// The values the input's relevance can reach: those computed from the inputs (after self), tensors
// only (a size read from one is no relevance), through if-branches too; not through detach, nor
// into tensors made from a carrier's shape or by comparing it (relevanceBarrier).
ValueSet relevanceCarriers(torch::jit::Graph& graph);

// The values the model's output is computed from through ops a gradient passes (a value only a
// held-fixed softmax or a shape reads takes no rule: nothing reaches it).
ValueSet liveValues(torch::jit::Graph& graph);

} // namespace torchscope::relevance
