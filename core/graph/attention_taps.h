#pragma once

// Attention probabilities out of a model's graph, whether or not the model ever materialises them.
// Three forms are recognised in a module's own code (the functions it calls inlined first):
//  - aten::scaled_dot_product_attention (timm, nn.MultiheadAttention with need_weights=False),
//    with its mask, causal flag, scale and grouped heads;
//  - aten::_native_multi_head_attention, nn.MultiheadAttention's inference fast path;
//  - a softmax over the last dim of a matmul's result, plus bias or mask: softmax(q kᵀ·s + b), as
//    Swin (per window) and nn.MultiheadAttention with need_weights=True write it.
// For the first two the probabilities are computed beside the model's node from the same q, k and
// mask, in the model's dtype; the model's own nodes stay as they are, so its output is unchanged.
// Recognising the forms is model/attention_modules' (the module tree marks modules that compute
// attention); tapping them is this file's. Includes Torch: for the instrumenter only.

#include "model/attention_modules.h" // inlineFunctionCalls, the forms recognised

#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/ir.h>

#include <vector>

namespace torchscope {

struct AttentionTap {
    torch::jit::Value* probabilities;
    // The model's own value they may be a view of (its softmax), else nullptr (computed beside it):
    // a later in-place op on it would change what was grabbed.
    torch::jit::Value* modelsOwn;
};

// One tap per attention computation from `first` up to `end` (nested blocks included), in graph
// order, each inserted just after its computation and in its block: [N, heads, queries, keys]
// ([N, 1, queries, keys] where the model has no heads dimension; windows before the heads, as
// MaxViT's [N, windows, heads, Q, K], go into the first dim as Swin has them). inPath: gradients must reach the
// returned values (graph/request.h, attentionInPath).
std::vector<AttentionTap> tapAttention(
    torch::jit::Graph& graph, torch::jit::Node* first, torch::jit::Node* end, bool inPath);

} // namespace torchscope
