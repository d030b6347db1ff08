#pragma once

// The class that writes an exported program as a TorchScript module (loadExportedProgram in
// exported/exported_model.h), in three files by job:
// - exported_model.cpp: the modules, their weights, a method per module call and the root's forward;
// - exported_regions.cpp: torch.cond, while_loop and map as prim::If and prim::Loop around their
//   subgraphs;
// - exported_signature.cpp: the forward's arguments and results as the program's input and output
//   specs nest them, and the check of its inputs' shapes.
// Includes Torch: only for those three files.

#include "exported/call_tree.h"
#include "exported/exported_model.h"
#include "exported/exported_program.h"
#include "exported/node_emitter.h"
#include "exported/tree_spec.h"

#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/ir.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace torchscope {

class ProgramBuilder {
public:
    ProgramBuilder(const ExportedArchive& archive, const c10::Device& device, ExportedProgramInfo& info)
        : archive_(archive)
        , program_(archive.program.get_graph_module())
        , device_(device)
        , info_(info)
    { }

    std::unique_ptr<torch::jit::Module> build();

private:
    using Graph = torch::jit::Graph;
    using Value = torch::jit::Value;
    using Node = torch::_export::Node;

    // The graph being written for one method, and what it names so far.
    struct Scope {
        Graph* graph = nullptr;
        Value* self = nullptr;
        std::string path;
        std::map<std::string, Value*> values;
        std::map<std::string, Value*> modules; // relative path -> module value
    };

    // "_" for what a TorchScript identifier cannot hold.
    static std::string identifier(const std::string& text);
    // TorchScript refuses debug names that are plain numbers (they are its own unnamed values).
    static bool usableName(const std::string& name);
    // "torchvision.models.resnet.Bottleneck" -> "__torch__.torchvision.models.resnet.Bottleneck"
    static std::string className(const std::string& pythonType);

    // exported_model.cpp
    static torch::_export::Argument outputArgument(const torch::_export::OutputSpec& spec);
    // The lifted state a value name stands for: its own entry, or inside a region's subgraph the
    // state passed in under that name.
    const ExportedState* stateOf(const std::string& name) const;
    bool reachable(const std::string& name, const std::string& path) const;
    void createModule(const std::string& path);
    // In the program's module order (module_call_graph follows Python's named_modules()), so the
    // tree reads as the model's code defines it; paths only the nodes or the weights name come after.
    void createModules();
    ValueScope valueScope(Scope& scope);
    Value* moduleValue(Scope& scope, const std::string& path);
    Value* resolve(Scope& scope, const std::string& name);
    // `nodes`: those of the graph the call tree was built from (the program's, or a region's).
    void emitItems(const ModuleCall& call, Scope& scope, const std::vector<Node>& nodes);
    // The call's nodes become a method of its module; the caller's graph calls it.
    void emitCall(const ModuleCall& call, Scope& caller, const std::vector<Node>& nodes);
    void emitRoot();

    // exported_regions.cpp
    // The names a region's argument or its subgraph's inputs and outputs hold, in order (export writes
    // a symbolic size among a region's operands as if it were a tensor).
    static std::vector<std::string> namesOf(const std::vector<torch::_export::Argument>& arguments);
    static std::string describe(const Node& node);
    // The nodes of a region's subgraph, written where the graph's insertion point is (inside a
    // branch or a loop body), on `inputs` in the order of the subgraph's inputs; returns its outputs.
    // The subgraph sees only what it is given; the modules it calls become calls of their methods.
    std::vector<Value*> emitSubgraph(const torch::_export::Graph& region, const std::vector<Value*>& inputs,
        const std::vector<std::string>& outerNames, Scope& outer, const std::string& what);
    const torch::_export::Graph& subgraph(const Node& node, size_t index) const;
    std::vector<std::string> operandNames(const Node& node, size_t index) const;
    static Value* condition(Graph& graph, Value* value);
    // torch.cond, while_loop and map as TorchScript's own control flow (prim::If, prim::Loop) around
    // their subgraphs' nodes: the engine instruments the modules called inside as it does a scripted
    // model's branches and loops, and autograd follows the branch or the iterations that ran.
    void emitRegion(const Node& node, Scope& scope);

    // exported_signature.cpp
    using Leaves = std::vector<std::pair<std::string, c10::TypePtr>>;
    const torch::_export::ModuleCallSignature* rootSignature() const;
    // The user inputs in the order of the program's flat input list: a graph name, or "" for a
    // value export baked in (a Python number), which the forward takes and ignores.
    Leaves userInputs() const;
    c10::TypePtr specType(const TreeSpec& spec, const Leaves& leaves, size_t& next) const;
    // Takes a forward argument apart into the program's flat inputs.
    void unpackInput(Scope& scope, Value* value, const TreeSpec& spec, const Leaves& leaves, size_t& next);
    void addInputs(Scope& scope);
    void checkInputShapes(Scope& scope, const Leaves& leaves);
    Value* packOutput(Scope& scope, const TreeSpec& spec, const std::vector<Value*>& leaves, size_t& next);

    const ExportedArchive& archive_;
    const torch::_export::GraphModule& program_;
    c10::Device device_;
    ExportedProgramInfo& info_;
    CallTree tree_;
    std::shared_ptr<torch::jit::CompilationUnit> unit_;
    std::map<std::string, torch::jit::Module> modules_;
    std::map<std::string, std::string> stateByFqn_;
    std::map<std::string, int> callCount_;
    std::map<std::string, std::string> alias_; // a region's input name -> the state passed in as it
    std::map<std::string, std::set<std::string>> parameters_; // module path -> its own parameters
    std::set<std::string> modulePaths_; // the program's module_call_graph
};

} // namespace torchscope
