#pragma once

#include "graph/request.h"

#include <torch/csrc/jit/ir/ir.h>

#include <vector>

namespace torchscope {

// Inserts the TorchScript code of one edit at the graph's current insertion point and returns
// the edited value. `tensors`: the graph inputs carrying the edit's tensors (EditSpec::tensorCount).
torch::jit::Value* insertEdit(torch::jit::Graph& graph, torch::jit::Value* output, const EditSpec& edit,
    const std::vector<torch::jit::Value*>& tensors);

} // namespace torchscope
