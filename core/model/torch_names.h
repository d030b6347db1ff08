#pragma once

// Small helpers over TorchScript IR shared by the model tree and the graph surgery.
// Includes Torch: only for core/*.cpp files that already need it.

#include <torch/csrc/jit/ir/ir.h>

#include <functional>
#include <string>
#include <unordered_map>

namespace torchscope {

// "__torch__.torchvision.models.resnet.___torch_mangle_3.BasicBlock" ->
// "torchvision.models.resnet.BasicBlock"
std::string readableTypeName(const c10::TypePtr& type);

bool isModuleType(const c10::TypePtr& type);
// A module, or a module seen through an interface type (a submodule annotated with one).
bool isModuleValue(const torch::jit::Value* value);

// forward, forward1, forward2 ... (traced models' later calls), forward__0, forward__1 ...
// (overloads declared with @torch.jit._overload_method, as DenseNet's layers are).
bool isForwardMethodName(const std::string& name);

// "a" + "b" -> "a.b"; "" + "b" -> "b"
std::string joinPath(const std::string& base, const std::string& name);
// "a.b.c" -> "a.b"; "a" -> "" (the root)
std::string parentPath(const std::string& path);

// Visits every node of a block and of the blocks nested in it, in program order.
void forEachNode(torch::jit::Block* block, const std::function<void(torch::jit::Node*)>& visit);

// The module path of every value that is a GetAttr chain from self (graph input 0), relative to
// the graph's own module ("" for self).
std::unordered_map<const torch::jit::Value*, std::string> modulePaths(torch::jit::Graph& graph);

// Line of the node in its TorchScript source, 0 when unknown.
int sourceLine(const torch::jit::Node* node);

// "resnet.py:273" (the Python file the model was scripted from), or "line 12"; empty if unknown.
std::string sourceLocation(const torch::jit::Node* node);

} // namespace torchscope
