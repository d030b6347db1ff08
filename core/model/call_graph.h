#pragma once

// Which modules a model's forward reaches, found statically. Includes Torch: for model.cpp only.

#include "model/module_info.h"

#include <map>
#include <set>
#include <string>

namespace torch::jit {
struct Module;
}

namespace torchscope {

struct CallGraph {
    // Every call of a module's forward (forward, forward1..., forward__0...) in code the root's
    // forward reaches, keyed by the callee's path. A call inside a branch counts.
    std::map<std::string, std::vector<CallSite>> callSites;
    // Modules whose attributes (weights, buffers) reached code reads without calling them:
    // Swin's attention reads self.proj.weight for F.linear.
    std::set<std::string> attributesRead;
    // Modules called only without an input and giving nothing back: torch.jit.trace records a
    // module that passes its input through (nn.Identity, timm's act/drop when disabled) that way,
    // since no traced value flows through it. There is no value to grab at such a call.
    std::set<std::string> emptyCalls;
};

// Follows prim::CallMethod from the root's forward through every method it reaches, on the
// methods' own graphs (module boundaries intact), as the instrumenter will inline them.
CallGraph traceCalls(const torch::jit::Module& root);

// Why a module's forward never runs, for the module tree and error messages.
std::string notCalledReason(const std::string& path, const CallGraph& graph);

} // namespace torchscope
