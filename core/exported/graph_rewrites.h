#pragma once

// Rewrites of an exported program's graph (export-schema JSON) before TorchScope reads it, so that
// what export writes for Python's convenience opens as the model's own code.
//
// torch.export writes a region of forward that runs under `with torch.autocast(..., enabled=False)`
// or `with torch.no_grad()` / `torch.set_grad_enabled(...)` as one higher-order node over a subgraph
// (torch.ops.higher_order.wrap_with_autocast, wrap_with_set_grad_enabled). Such a region is straight
// code: its nodes go into the program's graph in its place, each keeping its module stack, so every
// module inside opens, runs and is grabbed like any other. A region without gradients hands its
// results on detached (as torch.no_grad does); autocast that is on would change the region's
// precision and is refused, saying so. No Torch in this header.

#include <nlohmann/json.hpp>

#include <string>

namespace torchscope {

// Replaces every wrapped region of `graph` (an export-schema Graph as JSON: inputs, outputs, nodes,
// tensor_values, ...) with the nodes of its subgraph, regions inside regions included. The region's
// own names are renamed where they would clash with the graph's. Throws torchscope::Error naming the
// node when a region cannot be inlined exactly; leaves other higher-order operators to the emitter.
void inlineWrappedRegions(nlohmann::json& graph);

// Dropout in eval mode returns its input itself, so export credits every later use of that tensor
// to the dropout: a residual `x + block(x)` whose block begins with a Dropout module reads the
// dropout's result, and the block seems to return two values. Uses outside the module that called
// the dropout (outside the module itself for a functional dropout) read the dropout's input, which
// is the same tensor; the dropout's own grab is unchanged.
void readThroughEvalDropouts(nlohmann::json& graph);

} // namespace torchscope
