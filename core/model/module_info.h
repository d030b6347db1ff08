#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace torchscope {

// Where a parent's code calls a child module.
struct CallSite {
    std::string method; // the parent's method that calls it ("forward", "_forward_impl", "forward1")
    int line = 0; // line in the parent's TorchScript code, 0 when unknown
    std::string context; // "" at top level, else "inside an if-branch" / "inside a loop"
};

// One module of the loaded tree, as plain values (no Torch types), ordered as named_modules().
struct ModuleInfo {
    std::string path; // dotted, exactly as Python's named_modules() ("" is the root)
    std::string name; // last path component
    std::string shortType; // "Conv2d"
    std::string qualifiedType; // "torch.nn.modules.conv.Conv2d" (TorchScript mangling removed)
    int64_t ownParameters = 0;
    int64_t totalParameters = 0;
    int parent = -1; // index into the module list, -1 for the root
    std::vector<int> children;
    std::vector<CallSite> callSites; // how often and where code the forward reaches calls it
    // False when the forward never calls this module (see notCalledReason): grabs by glob or
    // type skip it, a grab by path is refused with the reason, dry runs leave it out.
    bool called = true;
    std::string notCalledReason;
    // Its own forward computes attention (graph/attention_taps.h): PATH:attention can be grabbed.
    bool holdsAttention = false;
    // Output shape of each call after a dry run (empty before; empty inner vector: not a tensor).
    std::vector<std::vector<int64_t>> outputShapes;
};

// One argument of the model's forward (after self), read from its schema.
struct ForwardArgument {
    std::string name;
    std::string type; // "Tensor", "List[Tensor]", "Optional[List[Dict[str, Tensor]]]"
    bool hasDefault = false;
};

} // namespace torchscope
