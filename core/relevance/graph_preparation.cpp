#include "relevance/graph_preparation.h"

#include "common/strings.h"
#include "graph/instrumenter.h"
#include "model/torch_names.h"

#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/passes/constant_propagation.h>
#include <torch/csrc/jit/passes/peephole.h>

#include <set>
#include <vector>

namespace torchscope::relevance {
namespace {

using torch::jit::Graph;
using torch::jit::Node;
using torch::jit::Value;
using torch::jit::WithInsertPoint;

// Ops whose output no relevance reaches though they read a carrier: new tensors of its size or
// type, comparisons, indices (Swin's shifted-window mask is made from `x.new_zeros`).
const std::initializer_list<const char*> NoRelevance{"aten::new_full", "aten::new_zeros", "aten::new_ones",
    "aten::new_empty", "aten::full_like", "aten::empty_like", "aten::zeros_like", "aten::ones_like", "aten::eq",
    "aten::ne", "aten::lt", "aten::le", "aten::gt", "aten::ge", "aten::argmax", "aten::argmin", "aten::sign",
    "aten::isnan", "aten::isinf", "aten::isfinite", "aten::logical_not", "aten::logical_and", "aten::logical_or"};

void foldModuleConstants(Graph& graph, const torch::jit::Module& module)
{
    std::set<std::string> assigned;
    std::vector<Node*> reads;
    forEachNode(graph.block(), [&](Node* node) {
        if (node->kind() == c10::prim::SetAttr)
            assigned.insert(node->s(c10::attr::name));
        if (node->kind() == c10::prim::GetAttr)
            reads.push_back(node);
    });
    const auto owners = modulePaths(graph);
    for (Node* read : reads) {
        const auto kind = read->output()->type()->kind();
        if (kind != c10::TypeKind::BoolType && kind != c10::TypeKind::IntType && kind != c10::TypeKind::FloatType
            && kind != c10::TypeKind::StringType)
            continue;
        const std::string name = read->s(c10::attr::name);
        if (name == "training" || assigned.count(name))
            continue;
        const auto owner = owners.find(read->input(0));
        if (owner == owners.end())
            continue;
        const auto holder = moduleAt(module, owner->second);
        if (!holder || !holder->hasattr(name))
            continue;
        WithInsertPoint before(read);
        read->output()->replaceAllUsesWith(graph.insertConstant(holder->attr(name)));
    }
}

} // namespace

bool isOp(const Node* node, std::initializer_list<const char*> names)
{
    for (const char* name : names)
        if (node->kind() == c10::Symbol::fromQualString(name))
            return true;
    return false;
}

bool isTensor(const Value* value)
{
    return value->type()->isSubtypeOf(*c10::TensorType::get());
}

bool holdsTensors(const c10::TypePtr& type)
{
    if (type->isSubtypeOf(*c10::TensorType::get()))
        return true;
    for (const auto& contained : type->containedTypes())
        if (holdsTensors(contained))
            return true;
    return false;
}

void Inliner::run(Graph& graph)
{
    while (true) {
        const auto modules = modulePaths(graph);
        Node* call = nullptr;
        std::string path;
        torch::jit::GraphFunction* function = nullptr;
        forEachNode(graph.block(), [&](Node* node) {
            if (call)
                return;
            if (node->kind() == c10::prim::CallMethod) {
                if (const auto found = modules.find(node->input(0)); found != modules.end()) {
                    call = node;
                    path = found->second;
                }
            } else if (node->kind() == c10::prim::CallFunction) {
                const auto type = node->input(0)->type()->cast<c10::FunctionType>();
                if ((function = type ? torch::jit::tryToGraphFunction(*type->function()) : nullptr)) {
                    call = node;
                    path = pathOf(node);
                }
            }
        });
        if (!call)
            return;
        Node* before = call->prev();
        Node* after = call->next();
        if (function) {
            call->removeInput(0); // the function constant: the callee's inputs are the rest
            torch::jit::inlineCallTo(call, function, function->graph().get());
        } else {
            inlineModuleCall(call, path);
        }
        for (Node* node = before->next(); node != after; node = node->next()) {
            paths_[node] = path;
            for (auto* block : node->blocks()) // kept when a constant branch is taken out of its if
                forEachNode(block, [&](Node* nested) { paths_.emplace(nested, path); });
        }
    }
}

std::string Inliner::pathOf(const Node* node) const
{
    for (; node; node = node->owningBlock()->owningNode())
        if (const auto found = paths_.find(node); found != paths_.end())
            return found->second;
    return {};
}

std::optional<torch::jit::Module> moduleAt(const torch::jit::Module& module, const std::string& path)
{
    try {
        torch::jit::Module holder = module;
        for (const auto& part : split(path, '.'))
            if (!part.empty())
                holder = holder.attr(part).toModule();
        return holder;
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

void prepareGraph(Graph& graph, const torch::jit::Module& module, Inliner& inliner)
{
    inliner.run(graph);
    foldModuleConstants(graph, module);
    auto shared = graph.shared_from_this();
    torch::jit::PeepholeOptimize(shared, /*disable_shape_peepholes=*/true);
    torch::jit::ConstantPropagation(shared);
}

ValueSet relevanceCarriers(Graph& graph)
{
    ValueSet carriers;
    const auto carries = [&](const Node* node) {
        for (const Value* input : node->inputs())
            if (carriers.count(input))
                return true;
        return false;
    };
    for (size_t i = 1; i < graph.inputs().size(); ++i)
        carriers.insert(graph.inputs()[i]);
    for (size_t before = 0; before != carriers.size();) {
        before = carriers.size();
        forEachNode(graph.block(), [&](Node* node) {
            if (isOp(node, {"aten::detach"}) || isOp(node, NoRelevance))
                return; // nothing flows back through it
            bool reached = carries(node);
            for (const auto* block : node->blocks())
                for (const Value* returned : block->return_node()->inputs())
                    reached = reached || carriers.count(returned);
            if (reached)
                for (Value* output : node->outputs())
                    if (holdsTensors(output->type()))
                        carriers.insert(output);
        });
    }
    return carriers;
}

ValueSet liveValues(Graph& graph)
{
    ValueSet liveSet;
    const auto live = [&](const Node* node) {
        for (const Value* output : node->outputs())
            if (liveSet.count(output))
                return true;
        return false;
    };
    const auto readByLive = [&](const Value* value) {
        for (const auto& use : value->uses()) {
            const Node* user = use.user;
            if (isOp(user, {"aten::detach"}))
                continue;
            if (user->kind() == c10::prim::Return) {
                const Node* owner = user->owningBlock()->owningNode();
                if (!owner)
                    return true; // the graph's own output
                const size_t offset = owner->kind() == c10::prim::Loop ? use.offset - 1 : use.offset;
                if (owner->kind() == c10::prim::Loop && use.offset == 0)
                    continue; // the loop's condition
                if (offset < owner->outputs().size() && liveSet.count(owner->outputs()[offset]))
                    return true;
                continue;
            }
            if (live(user)) // an if or a loop whose output lives reads its condition and inputs too
                return true;
        }
        return false;
    };
    for (Value* v : graph.outputs())
        liveSet.insert(v);
    for (size_t before = 0, pass = 0; pass == 0 || before != liveSet.size(); ++pass) {
        before = liveSet.size();
        forEachNode(graph.block(), [&](Node* node) {
            for (Value* output : node->outputs())
                if (!liveSet.count(output) && readByLive(output))
                    liveSet.insert(output);
        });
    }
    return liveSet;
}

} // namespace torchscope::relevance
