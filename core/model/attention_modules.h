#pragma once

// Which nodes of a module's code compute attention, in the three forms graph/attention_taps.h
// taps: aten::scaled_dot_product_attention, nn.MultiheadAttention's fast path
// aten::_native_multi_head_attention, and a softmax over the last dim of a product q kᵀ (plus
// bias or mask) that feeds a product with the values (a router's softmax does not). The module
// tree marks the modules that hold attention with it. Includes Torch: for the loader and the
// instrumenter only.

#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/ir.h>

#include <functional>

namespace torchscope {

bool isKind(const torch::jit::Node* node, const char* qualified);
// Visits every node from `first` up to (not including) `end`, and the nodes of their blocks.
void forEachNodeBetween(
    torch::jit::Node* first, torch::jit::Node* end, const std::function<void(torch::jit::Node*)>& visit);
bool isAttentionNode(const torch::jit::Node* node);

// Inlines every prim::CallFunction in the nodes from `first` up to (not including) `end`, and in
// their blocks, until none is left: F.multi_head_attention_forward's or Swin's ops become visible.
void inlineFunctionCalls(torch::jit::Node* first, torch::jit::Node* end);

// Whether the module's own forward (with the functions it calls, without its submodules) computes
// attention in one of the recognised forms.
bool computesAttention(const torch::jit::Module& module);

} // namespace torchscope
