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

def sae_latents(x: Tensor, w_enc: Tensor, b_enc: Tensor, w_dec: Tensor, b_dec: Tensor, k: int, threshold: float,
                positions: str, prefix: int, latents: List[int], op: str, factor: float) -> Tensor:
    d_in = w_enc.size(0)
    first = 0
    count = 0
    if x.dim() == 4:
        assert x.size(1) == d_in, "the SAE reads vectors of {} values, but this output has {} channels (shape {})".format(d_in, x.size(1), x.size())
        v = x.permute(0, 2, 3, 1)
    elif x.dim() == 3:
        assert x.size(2) == d_in, "the SAE reads vectors of {} values, but these tokens have {} (shape {})".format(d_in, x.size(2), x.size())
        count = x.size(1)
        if positions == "class":
            count = 1
        elif positions == "patches":
            first = prefix
            count = x.size(1) - prefix
        v = x.narrow(1, first, count)
    else:
        assert x.dim() == 2 and x.size(1) == d_in, "the SAE reads vectors of {} values; this output has shape {}".format(d_in, x.size())
        v = x
    w_enc = w_enc.to(device=x.device, dtype=x.dtype)
    w_dec = w_dec.to(device=x.device, dtype=x.dtype)
    pre = torch.matmul(v - b_dec.to(device=x.device, dtype=x.dtype), w_enc) + b_enc.to(device=x.device, dtype=x.dtype)
    if k > 0:
        top = pre.topk(k, -1)
        codes = torch.zeros_like(pre).scatter(-1, top.indices, top.values.relu())
    else:
        positive = pre.relu()
        codes = positive * (positive > threshold).to(positive.dtype)
    for latent in latents:
        assert latent < w_enc.size(1), "latent {} is out of range: the SAE has {}".format(latent, w_enc.size(1))
    index = torch.tensor(latents, device=x.device)
    chosen = codes.index_select(-1, index)
    if op == "ablate":
        edited = chosen * 0.0
    elif op == "scale":
        edited = chosen * factor
    else:
        edited = chosen + factor
    # The reconstruction with the edit plus the error term: v + (f' - f) W_dec, over the edited latents only.
    spliced = v + torch.matmul(edited - chosen, w_dec.index_select(0, index))
    if x.dim() == 4:
        return spliced.permute(0, 3, 1, 2).contiguous()
    if x.dim() == 3:
        return torch.cat([x.narrow(1, 0, first), spliced, x.narrow(1, first + count, x.size(1) - first - count)], 1)
    return spliced
)TS";

torch::jit::Graph& editGraph(const std::string& name)
{
    // Compiled once per process (thread-safe static). The optimized graphs have the helper
    // inlined, so no call into the compilation unit survives in an instrumented graph.
    static const auto graphs = [] {
        const auto unit = torch::jit::compile(kEditSource);
        std::map<std::string, std::shared_ptr<torch::jit::Graph>> byName;
        for (const char* n : {"zero_channels", "scale_channels", "add_tensor", "replace_tensor", "sae_latents"})
            byName[n] = torch::jit::toGraphFunction(unit->get_function(n)).optimized_graph();
        return byName;
    }();
    return *graphs.at(name);
}

} // namespace

torch::jit::Value* insertEdit(torch::jit::Graph& graph, torch::jit::Value* output, const EditSpec& edit,
    const std::vector<torch::jit::Value*>& tensors)
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
        inputs.push_back(tensors.at(0));
        break;
    case EditKind::Replace:
        name = "replace_tensor";
        inputs.push_back(tensors.at(0));
        break;
    case EditKind::SaeLatents:
        name = "sae_latents";
        inputs.insert(inputs.end(), tensors.begin(), tensors.begin() + 4);
        inputs.push_back(graph.insertConstant(c10::IValue(edit.saeK)));
        inputs.push_back(graph.insertConstant(c10::IValue(edit.saeThreshold)));
        inputs.push_back(graph.insertConstant(c10::IValue(edit.positions)));
        inputs.push_back(graph.insertConstant(c10::IValue(edit.prefixTokens)));
        inputs.push_back(graph.insertConstant(c10::IValue(edit.channels)));
        inputs.push_back(graph.insertConstant(c10::IValue(edit.latentOp)));
        inputs.push_back(graph.insertConstant(c10::IValue(edit.factor)));
        break;
    }
    return torch::jit::insertGraph(graph, editGraph(name), inputs).at(0);
}

} // namespace torchscope
