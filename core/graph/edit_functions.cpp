#include "graph/edit_functions.h"

#include <torch/csrc/jit/api/function_impl.h>
#include <torch/jit.h>
#include <torch/script.h>

#include <map>

namespace torchscope {
namespace {

// Written in TorchScript so that they run inside the instrumented graph on the model's device,
// and so that bad arguments raise with a readable message at run time. (Assertions, because
// the C++ compiler's resolver does not know Python's exception classes.)
const char* kEditSource = R"TS(
def _check_channels(x: Tensor, channels: List[int]):
    assert x.dim() >= 2, "channel edits need an output with channels in dim 1, got shape {}".format(x.size())
    for c in channels:
        assert c < x.size(1), "channel {} is out of range: the output has {} channels (shape {})".format(c, x.size(1), x.size())

def zero_channels(x: Tensor, channels: List[int]) -> Tensor:
    _check_channels(x, channels)
    index = torch.tensor(channels, device=x.device)
    return x.index_fill(1, index, 0.0)

def scale_channels(x: Tensor, channels: List[int], factor: float) -> Tensor:
    _check_channels(x, channels)
    index = torch.tensor(channels, device=x.device)
    return x.index_copy(1, index, x.index_select(1, index) * factor)

def add_tensor(x: Tensor, t: Tensor) -> Tensor:
    return x + t.to(device=x.device, dtype=x.dtype)

def replace_tensor(x: Tensor, t: Tensor) -> Tensor:
    assert t.size() == x.size(), "the replacement has shape {} but the output it replaces has shape {}".format(t.size(), x.size())
    return t.to(device=x.device, dtype=x.dtype)
)TS";

torch::jit::Graph& editGraph(const std::string& name)
{
    // Compiled once per process (thread-safe static). The optimized graphs have the helper
    // inlined, so no call into the compilation unit survives in an instrumented graph.
    static const auto graphs = [] {
        const auto unit = torch::jit::compile(kEditSource);
        std::map<std::string, std::shared_ptr<torch::jit::Graph>> byName;
        for (const char* n : {"zero_channels", "scale_channels", "add_tensor", "replace_tensor"})
            byName[n] = torch::jit::toGraphFunction(unit->get_function(n)).optimized_graph();
        return byName;
    }();
    return *graphs.at(name);
}

} // namespace

torch::jit::Value* insertEdit(
    torch::jit::Graph& graph, torch::jit::Value* output, const EditSpec& edit, torch::jit::Value* tensor)
{
    std::vector<torch::jit::Value*> inputs{output};
    const char* name = nullptr;
    switch (edit.kind) {
    case EditKind::ZeroChannels:
        name = "zero_channels";
        inputs.push_back(graph.insertConstant(c10::IValue(edit.channels)));
        break;
    case EditKind::ScaleChannels:
        name = "scale_channels";
        inputs.push_back(graph.insertConstant(c10::IValue(edit.channels)));
        inputs.push_back(graph.insertConstant(c10::IValue(edit.factor)));
        break;
    case EditKind::Add:
        name = "add_tensor";
        inputs.push_back(tensor);
        break;
    case EditKind::Replace:
        name = "replace_tensor";
        inputs.push_back(tensor);
        break;
    }
    return torch::jit::insertGraph(graph, editGraph(name), inputs).at(0);
}

} // namespace torchscope
