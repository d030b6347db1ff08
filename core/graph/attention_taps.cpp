#include "graph/attention_taps.h"

#include "model/attention_modules.h"
#include "model/torch_names.h"

#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/jit.h>

#include <functional>
#include <map>
#include <string>

namespace torchscope {

using torch::jit::Block;
using torch::jit::Graph;
using torch::jit::Node;
using torch::jit::Value;
using torch::jit::WithInsertPoint;

namespace {

// The probabilities as PyTorch's math kernel defines them (torch.nn.functional's reference for
// scaled_dot_product_attention; MultiheadAttention's need_weights=True path for the fast path):
// softmax(q kᵀ · scale + mask). A boolean mask keeps where it is True for SDPA and drops where it
// is True for the fast path, as each op reads it. Written in TorchScript so that they run in the
// instrumented graph, on the model's device and in its dtype.
const char* kAttentionSource = R"TS(
def _sdpa_logits(q: Tensor, k: Tensor, mask: Optional[Tensor], is_causal: bool, scale: Optional[float], enable_gqa: bool) -> Tensor:
    factor = q.size(-1) ** -0.5
    if scale is not None:
        factor = scale
    if enable_gqa and q.dim() >= 3 and k.size(-3) != q.size(-3):
        k = k.repeat_interleave(q.size(-3) // k.size(-3), -3)
    logits = torch.matmul(q, k.transpose(-2, -1)) * factor
    if is_causal:
        later = torch.ones([q.size(-2), k.size(-2)], device=q.device).triu(1) > 0
        logits = logits.masked_fill(later, float("-inf"))
    if mask is not None:
        if not mask.is_floating_point():
            logits = logits.masked_fill(mask.logical_not(), float("-inf"))
        else:
            logits = logits + mask
    return logits

def _safe_softmax(logits: Tensor) -> Tensor:
    # As PyTorch's math kernel: a query whose every key is masked attends to nothing (0), not NaN.
    dead = (logits == float("-inf")).all(-1, keepdim=True)
    return torch.softmax(logits, -1).masked_fill(dead, 0.0)

def _with_heads(p: Tensor) -> Tensor:
    # [N, Q, K]: one head; [N, windows, H, Q, K] (MaxViT): windows into the batch, as Swin has them.
    if p.dim() == 3:
        return p.unsqueeze(1)
    if p.dim() > 4:
        return p.flatten(0, p.dim() - 4)
    return p

def sdpa_probabilities(q: Tensor, k: Tensor, mask: Optional[Tensor], is_causal: bool, scale: Optional[float], enable_gqa: bool) -> Tensor:
    return _with_heads(_safe_softmax(_sdpa_logits(q, k, mask, is_causal, scale, enable_gqa)))

def sdpa_in_path(q: Tensor, k: Tensor, v: Tensor, mask: Optional[Tensor], is_causal: bool, scale: Optional[float], enable_gqa: bool) -> Tuple[Tensor, Tensor]:
    probabilities = _with_heads(_safe_softmax(_sdpa_logits(q, k, mask, is_causal, scale, enable_gqa)))
    values = _with_heads(v)
    if enable_gqa and values.size(-3) != probabilities.size(-3):
        values = values.repeat_interleave(probabilities.size(-3) // values.size(-3), -3)
    # Back to the shape the kernel gives, q's with v's last dim (3-D, or windows before the heads).
    size = q.size()
    size[-1] = v.size(-1)
    return probabilities, torch.matmul(probabilities, values).reshape(size)

def native_mha_probabilities(query: Tensor, key: Tensor, embed_dim: int, num_heads: int, qkv_weight: Tensor, qkv_bias: Tensor, mask: Optional[Tensor], mask_type: Optional[int]) -> Tensor:
    head_dim = embed_dim // num_heads
    weights = qkv_weight.chunk(3, 0)
    biases = qkv_bias.chunk(3, 0)
    batch = query.size(0)
    # addmm: the projection and its bias in one GEMM, as nn.Linear computes them.
    q = torch.addmm(biases[0], query.reshape(-1, embed_dim), weights[0].t())
    k = torch.addmm(biases[1], key.reshape(-1, embed_dim), weights[1].t())
    q = q.view(batch, query.size(1), num_heads, head_dim).transpose(1, 2)
    k = k.view(batch, key.size(1), num_heads, head_dim).transpose(1, 2)
    logits = torch.matmul(q, k.transpose(-2, -1)) * (head_dim ** -0.5)
    if mask is not None:
        if mask_type is not None and mask_type == 1:
            mask = mask.view(batch, 1, 1, mask.size(-1))
        if not mask.is_floating_point():
            logits = logits.masked_fill(mask, float("-inf"))
        else:
            logits = logits + mask
    return torch.softmax(logits, -1)

def with_heads(p: Tensor) -> Tensor:
    return _with_heads(p)

def reshaped(p: Tensor, size: List[int]) -> Tensor:
    return p.reshape(size)

def reshaped_like(p: Tensor, like: Tensor) -> Tensor:
    return p.reshape(like.size())
)TS";

Graph& helper(const std::string& name)
{
    // Compiled once (thread-safe static) and inlined here, whatever the executor's settings: no call
    // into the compilation unit survives in an instrumented graph.
    static const auto graphs = [] {
        const auto unit = torch::jit::compile(kAttentionSource);
        std::map<std::string, std::shared_ptr<Graph>> byName;
        for (const char* n : {"sdpa_probabilities", "sdpa_in_path", "native_mha_probabilities", "with_heads",
                 "reshaped", "reshaped_like"}) {
            auto graph = torch::jit::toGraphFunction(unit->get_function(n)).graph()->copy();
            torch::jit::Inline(*graph);
            byName[n] = std::move(graph);
        }
        return byName;
    }();
    return *graphs.at(name);
}

Value* insertHelper(Graph& graph, const std::string& name, const std::vector<Value*>& inputs)
{
    return torch::jit::insertGraph(graph, helper(name), inputs).at(0);
}

// The op's argument at `index`, or the constant `fallback` where an older schema lacks it.
Value* argumentOr(Graph& graph, Node* node, size_t index, const c10::IValue& fallback)
{
    return index < node->inputs().size() ? node->input(index) : graph.insertConstant(fallback);
}

// Is `value` usable at `at`: defined before it, in its block or one enclosing it?
bool availableAt(const Value* value, const Node* at)
{
    const Node* definer = value->node();
    const Block* home = definer->owningBlock();
    for (const Block* block = at->owningBlock(); block;
         block = block->owningNode() ? block->owningNode()->owningBlock() : nullptr)
        if (block == home)
            return definer->kind() == c10::prim::Param || definer->isBefore(at);
    return false;
}

// nn.MultiheadAttention's need_weights=True path softmaxes [N·heads, Q, K] and later views the
// result as [N, heads, Q, K]: find that view (through dropout and if-branches) to split the heads.
Node* headsView(Value* probabilities, int depth = 6)
{
    if (depth == 0)
        return nullptr;
    for (const auto& use : probabilities->uses()) {
        Node* user = use.user;
        if ((isKind(user, "aten::view") || isKind(user, "aten::reshape")) && use.offset == 0
            && user->input(1)->node()->kind() == c10::prim::ListConstruct
            && user->input(1)->node()->inputs().size() == 4)
            return user;
        Value* next = nullptr;
        if (isKind(user, "aten::dropout") || isKind(user, "aten::feature_dropout") || isKind(user, "aten::contiguous"))
            next = user->output();
        else if (user->kind() == c10::prim::Return && user->owningBlock()->owningNode()
            && user->owningBlock()->owningNode()->kind() == c10::prim::If)
            next = user->owningBlock()->owningNode()->output(use.offset);
        if (next)
            if (Node* view = headsView(next, depth - 1))
                return view;
    }
    return nullptr;
}

Value* tapSdpa(Graph& graph, Node* node, bool inPath)
{
    WithInsertPoint after(node->next());
    std::vector<Value*> inputs{node->input(0), node->input(1)};
    if (inPath)
        inputs.push_back(node->input(2));
    inputs.push_back(node->input(3)); // attn_mask
    inputs.push_back(argumentOr(graph, node, 5, false)); // is_causal
    inputs.push_back(argumentOr(graph, node, 6, c10::IValue())); // scale
    inputs.push_back(argumentOr(graph, node, 7, false)); // enable_gqa
    if (!inPath)
        return insertHelper(graph, "sdpa_probabilities", inputs);
    const auto parts = torch::jit::createTupleUnpack(insertHelper(graph, "sdpa_in_path", inputs));
    Value* output = parts.at(1);
    node->output()->replaceAllUsesAfterNodeWith(output->node(), output);
    return parts.at(0);
}

Value* tapNativeMultiHeadAttention(Graph& graph, Node* node)
{
    WithInsertPoint after(node->next());
    return insertHelper(graph, "native_mha_probabilities",
        {node->input(0), node->input(1), node->input(3), node->input(4), node->input(5), node->input(6), node->input(9),
            argumentOr(graph, node, 12, c10::IValue())});
}

Value* tapSoftmax(Graph& graph, Node* node, bool inPath)
{
    Value* probabilities = node->output();
    Node* view = headsView(probabilities);
    WithInsertPoint after(node->next());
    Value* heads = nullptr;
    if (view) {
        std::vector<Value*> sizes;
        for (Value* size : view->input(1)->node()->inputs())
            if (availableAt(size, node->next()))
                sizes.push_back(size);
        if (sizes.size() == 4) {
            Value* list = graph.insertNode(graph.createList(c10::IntType::get(), sizes))->output();
            heads = insertHelper(graph, "reshaped", {probabilities, list});
        }
    }
    if (!heads)
        heads = insertHelper(graph, "with_heads", {probabilities});
    if (inPath) {
        // The model goes on with the heads view, viewed back: gradients reach what we return.
        Value* back = insertHelper(graph, "reshaped_like", {heads, probabilities});
        probabilities->replaceAllUsesAfterNodeWith(back->node(), back);
    }
    return heads;
}

} // namespace

std::vector<AttentionTap> tapAttention(Graph& graph, Node* first, Node* end, bool inPath)
{
    std::vector<Node*> found;
    forEachNodeBetween(first, end, [&](Node* node) {
        if (isAttentionNode(node))
            found.push_back(node);
    });
    std::vector<AttentionTap> taps;
    for (Node* node : found) {
        if (isKind(node, "aten::scaled_dot_product_attention"))
            taps.push_back({tapSdpa(graph, node, inPath), nullptr});
        else if (isKind(node, "aten::_native_multi_head_attention"))
            taps.push_back({tapNativeMultiHeadAttention(graph, node), nullptr});
        else
            taps.push_back({tapSoftmax(graph, node, inPath), node->output()});
    }
    return taps;
}

} // namespace torchscope
