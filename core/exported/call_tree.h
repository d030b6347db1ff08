#pragma once

#include "exported/exported_program.h"

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace torchscope {

// One call of an nn.Module in an exported program: the run of consecutive nodes whose
// nn_module_stack holds the same entry (export keys a module's second call "path@1").
struct ModuleCall {
    std::string path; // "layer1.0.conv1"; "" for the program itself
    std::string type; // "torch.nn.modules.conv.Conv2d"
    int firstNode = -1, lastNode = -1; // the positions it spans in the order the nodes run
    // In order: a node index (call == nullptr) or a nested call.
    struct Item {
        int node = -1;
        ModuleCall* call = nullptr;
    };
    std::vector<Item> items;
    std::vector<std::unique_ptr<ModuleCall>> children;
    // Values the call's nodes read that it does not produce, in order of first use (state reachable
    // from the module itself is not among them); values it produces that later nodes or the
    // program's outputs read, in order of production.
    std::vector<std::string> inputs;
    std::vector<std::string> outputs;
};

struct CallTree {
    std::unique_ptr<ModuleCall> root;
    std::set<std::string> calledPaths;
    std::map<std::string, std::string> types; // module path -> Python type, from the calls
};

// `reachable(name, path)`: whether the lifted state `name` belongs to the module at `path` or
// below it (then a method reads it from its own attributes rather than taking it as an input).
// `modules`: the program's module paths (its module_call_graph); a stack entry naming another
// path (export's "_empty_nn_module_stack_from_metadata_hook") is no module and is left out.
// Empty: every entry counts. `stacks`, when given, holds each node's nn_module_stack text in place of
// its metadata (a region's subgraph, which export leaves without one: see regionModuleStacks).
CallTree buildCallTree(const torch::_export::Graph& graph, const std::vector<std::string>& programOutputs,
    const std::set<std::string>& modules, const std::function<bool(const std::string&, const std::string&)>& reachable,
    const std::vector<std::string>* stacks = nullptr);

// The module each node of a control-flow region (the subgraph of torch.cond, while_loop or map) was
// called in, as nn_module_stack texts for buildCallTree: export records no module inside them. A
// module is recognised by its weights: a node is one call of module M when it is a whole-layer
// operation (a convolution, linear, normalisation, embedding or PReLU, which is all such a torch.nn
// layer's forward does) that reads every parameter of M and no state of any other module. Other
// nodes get "" (they stay with the module that runs the region). `stateOf(name)`: the parameter or
// buffer a value of the region stands for, as its fully qualified name, or "" for none;
// `parametersOf(path)`: the parameters module `path` holds itself (not its children's).
std::vector<std::string> regionModuleStacks(const torch::_export::Graph& region,
    const std::function<std::string(const std::string&)>& stateOf,
    const std::function<std::set<std::string>(const std::string&)>& parametersOf);

} // namespace torchscope
