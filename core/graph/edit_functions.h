#pragma once

#include "graph/request.h"

#include <torch/csrc/jit/ir/ir.h>

namespace torchscope {

// Inserts the TorchScript code of one edit at the graph's current insertion point and returns
// the edited value. `tensor` is the graph input carrying the tensor of Add / Replace edits.
torch::jit::Value* insertEdit(
    torch::jit::Graph& graph, torch::jit::Value* output, const EditSpec& edit, torch::jit::Value* tensor);

} // namespace torchscope
