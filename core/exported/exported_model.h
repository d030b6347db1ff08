#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

namespace torch::jit {
struct Module;
}

namespace torchscope {

// What the window and `inspect` show about a .pt2 besides its module tree.
struct ExportedProgramInfo {
    std::string torchVersion; // the PyTorch that exported it
    std::string schemaVersion; // "8.20"
    std::vector<std::string> inputs; // "x: float32[s77, 3, 224, 224]"
    std::vector<std::string> dynamicDimensions; // "s77 in [2, 64]"
    size_t nodeCount = 0;
    // A torch.cond, while_loop or map region: export records no module inside one, so a module that
    // runs there is found only by its weights (see regionModuleStacks in exported/call_tree.h).
    struct Region {
        std::string node; // "node 'cond' (torch.ops.higher_order.cond)"
        std::string caller; // the module path that runs it ("" for the program)
        std::set<std::string> modules; // those whose weights it is given, with their ancestors below caller
    };
    std::vector<Region> regions;
};

// "torch.export program (.pt2) by PyTorch 2.14.1, schema 8.20, 180 nodes; inputs x: float32[s77, 3,
// 224, 224]; dynamic s77 in [1, 64]": one paragraph for `inspect` and the window.
std::string describeExportedProgram(const ExportedProgramInfo& info);

// Opens a torch.export.save archive as a TorchScript module the engine instruments like a scripted
// model: one submodule per nn.Module path of the program's nn_module_stack metadata, each call of
// it a method holding that call's nodes (the first "forward", later ones "forward__1", ...), the
// parameters and buffers registered on their modules, and the forward's arguments and results
// nested as the program's input and output specs say. Inputs are checked against the exported
// shapes (static sizes, Dim ranges) when it runs. Throws torchscope::Error saying what is wrong.
std::unique_ptr<torch::jit::Module> loadExportedProgram(
    const std::string& path, const std::string& device, ExportedProgramInfo& info);

} // namespace torchscope
