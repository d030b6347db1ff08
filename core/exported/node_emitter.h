#pragma once

#include "exported/exported_program.h"

#include <torch/csrc/jit/ir/ir.h>

#include <functional>
#include <string>

namespace torchscope {

// How one method's graph names the exported program's values while it is being written.
struct ValueScope {
    std::function<torch::jit::Value*(const std::string&)> resolve; // throws for an unknown name
    std::function<void(const std::string&, torch::jit::Value*)> define;
    c10::Device exportDevice = c10::Device("cpu"); // device constants pointing here follow the model
    c10::Device device = c10::Device("cpu");
};

// Writes one node of the exported graph as the TorchScript node of the same operator (looked up
// by name and overload among the registered operators; arguments the file leaves out take the
// schema's defaults). Throws torchscope::Error naming the node and what is missing or unsupported.
void emitExportedNode(torch::jit::Graph& graph, const torch::_export::Node& node, const ValueScope& scope);

// A constant or value an argument stands for (a tensor, a list of them, an int, a device, ...).
torch::jit::Value* emitArgument(
    torch::jit::Graph& graph, const torch::_export::Argument& argument, const ValueScope& scope);

// The names of the graph values an argument refers to (tensors and symbolic ints, bools, floats).
void forEachValueName(const torch::_export::Argument& argument, const std::function<void(const std::string&)>& visit);

} // namespace torchscope
