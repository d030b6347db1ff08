#include "model/traced_rewrites.h"

#include <torch/csrc/jit/api/function_impl.h>
#include <torch/script.h>

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace torchscope {

namespace {

using torch::jit::Graph;
using torch::jit::Node;
using torch::jit::Value;
using Method = std::pair<const c10::ClassType*, std::string>;

std::optional<Method> callee(const Node* node)
{
    if (node->kind() != c10::prim::CallMethod)
        return std::nullopt;
    const auto type = node->input(0)->type()->cast<c10::ClassType>();
    if (!type)
        return std::nullopt;
    return Method{type.get(), node->s(c10::attr::name)};
}

void forEachNode(torch::jit::Block* block, const std::function<void(Node*)>& visit)
{
    for (auto* node : block->nodes()) {
        visit(node);
        for (auto* inner : node->blocks())
            forEachNode(inner, visit);
    }
}

// forward(self, x): return dropout(x, p, train=False), as a traced nn.Dropout in eval mode reads.
bool isEvalDropout(const Graph& graph)
{
    static const std::set<c10::Symbol> kinds{
        c10::aten::dropout, c10::aten::feature_dropout, c10::aten::alpha_dropout, c10::aten::feature_alpha_dropout};
    if (graph.inputs().size() != 2 || graph.outputs().size() != 1)
        return false;
    const Node* node = graph.outputs()[0]->node();
    if (!kinds.count(node->kind()) || node->inputs().size() != 3 || node->input(0) != graph.inputs()[1])
        return false;
    const auto train = torch::jit::toIValue(node->input(2));
    return train && train->isBool() && !train->toBool();
}

class Rewriter {
public:
    explicit Rewriter(const torch::jit::Module& root)
    {
        std::set<const c10::ClassType*> seen;
        for (const auto& named : root.named_modules()) {
            const auto type = named.value.type();
            if (!seen.insert(type.get()).second)
                continue;
            for (auto* method : type->methods())
                if (auto* function = torch::jit::tryToGraphFunction(*method))
                    methods_.emplace(Method{type.get(), method->name()}, function);
        }
    }

    int run()
    {
        // A method some caller does not unpack keeps its tuple; what its callers made of it is
        // found again without it.
        std::set<Method> blocked;
        while (true) {
            analyse(blocked);
            bool stable = true;
            for (const auto& [method, elements] : passThrough_)
                if (!everyCallerUnpacks(method)) {
                    blocked.insert(method);
                    stable = false;
                }
            if (stable)
                break;
        }
        for (const auto& [method, elements] : passThrough_)
            rewriteCallers(method, elements);
        for (const auto& [method, elements] : passThrough_)
            rewriteReturn(method, elements);
        return static_cast<int>(passThrough_.size());
    }

private:
    void analyse(const std::set<Method>& blocked)
    {
        dropouts_.clear();
        passThrough_.clear();
        std::set<Method> visited;
        std::function<void(const Method&)> visit = [&](const Method& method) {
            if (!visited.insert(method).second)
                return;
            const auto it = methods_.find(method);
            if (it == methods_.end())
                return;
            Graph& graph = *it->second->graph();
            if (isEvalDropout(graph)) {
                dropouts_.insert(method);
                return;
            }
            forEachNode(graph.block(), [&](Node* node) {
                if (const auto called = callee(node))
                    visit(*called);
            });
            if (blocked.count(method) || graph.outputs().size() != 1
                || graph.outputs()[0]->node()->kind() != c10::prim::TupleConstruct)
                return;
            const Node* tuple = graph.outputs()[0]->node();
            std::map<size_t, size_t> found;
            for (size_t k = 0; k < tuple->inputs().size(); ++k)
                if (const size_t input = passedThrough(tuple->input(k), graph))
                    found[k] = input;
            // A tuple of nothing but pass-throughs is the block's own result, whatever it is.
            if (!found.empty() && found.size() < tuple->inputs().size())
                passThrough_[method] = found;
        };
        for (const auto& [method, function] : methods_)
            visit(method);
    }

    // The index of the graph input `value` is when it comes from one through eval-mode dropouts
    // and pass-throughs callees return; 0 when it is anything else (or the input itself, untouched).
    size_t passedThrough(Value* value, const Graph& graph) const
    {
        bool through = false;
        while (true) {
            const Node* node = value->node();
            if (const auto called = callee(node); called && dropouts_.count(*called)) {
                value = node->input(1);
                through = true;
                continue;
            }
            if (node->kind() == c10::prim::TupleUnpack) {
                const Node* call = node->input()->node();
                const auto called = callee(call);
                const auto it = called ? passThrough_.find(*called) : passThrough_.end();
                if (it != passThrough_.end()) {
                    const auto element = it->second.find(value->offset());
                    if (element != it->second.end()) {
                        value = call->input(element->second);
                        through = true;
                        continue;
                    }
                }
            }
            break;
        }
        if (!through || value->node() != graph.param_node())
            return 0;
        return value->offset();
    }

    template <typename Visit> void forEachCall(const Method& method, Visit visit) const
    {
        for (const auto& [owner, function] : methods_)
            forEachNode(function->graph()->block(), [&](Node* node) {
                if (callee(node) == method)
                    visit(node);
            });
    }

    bool everyCallerUnpacks(const Method& method) const
    {
        bool unpacked = true;
        forEachCall(method, [&](Node* call) {
            const auto& uses = call->output()->uses();
            unpacked = unpacked && uses.size() == 1 && uses[0].user->kind() == c10::prim::TupleUnpack;
        });
        return unpacked;
    }

    c10::TypePtr keptType(const Method& method, const std::map<size_t, size_t>& elements) const
    {
        const Node* tuple = methods_.at(method)->graph()->outputs()[0]->node();
        std::vector<c10::TypePtr> types;
        for (size_t k = 0; k < tuple->inputs().size(); ++k)
            if (!elements.count(k))
                types.push_back(tuple->input(k)->type());
        return types.size() == 1 ? types[0] : c10::TupleType::create(types);
    }

    // Each caller reads the input it gave in place of a pass-through, and the rest as before.
    void rewriteCallers(const Method& method, const std::map<size_t, size_t>& elements) const
    {
        const auto type = keptType(method, elements);
        std::vector<Node*> calls;
        forEachCall(method, [&](Node* call) { calls.push_back(call); });
        for (Node* call : calls) {
            Node* unpack = call->output()->uses()[0].user;
            Graph& graph = *call->owningGraph();
            std::vector<Value*> kept;
            for (size_t k = 0; k < unpack->outputs().size(); ++k) {
                const auto element = elements.find(k);
                if (element != elements.end())
                    unpack->output(k)->replaceAllUsesWith(call->input(element->second));
                else
                    kept.push_back(unpack->output(k));
            }
            call->output()->setType(type);
            if (kept.size() == 1) {
                kept[0]->replaceAllUsesWith(call->output());
            } else {
                torch::jit::WithInsertPoint after(unpack);
                Node* fewer = graph.insertNode(graph.createTupleUnpack(call->output()));
                for (size_t i = 0; i < kept.size(); ++i)
                    kept[i]->replaceAllUsesWith(fewer->output(i));
            }
            unpack->destroy();
        }
    }

    void rewriteReturn(const Method& method, const std::map<size_t, size_t>& elements) const
    {
        auto* function = methods_.at(method);
        Graph& graph = *function->graph();
        Node* tuple = graph.outputs()[0]->node();
        std::vector<Value*> kept;
        for (size_t k = 0; k < tuple->inputs().size(); ++k)
            if (!elements.count(k))
                kept.push_back(tuple->input(k));
        Value* returned = kept[0];
        if (kept.size() > 1) {
            torch::jit::WithInsertPoint before(graph.return_node());
            returned = graph.insertNode(graph.createTuple(kept))->output();
        }
        graph.eraseOutput(0);
        graph.registerOutput(returned);
        if (!tuple->hasUses())
            tuple->destroy();
        function->setSchema(function->getSchema().cloneWithReturns({c10::Argument("", returned->type())}));
    }

    std::map<Method, torch::jit::GraphFunction*> methods_;
    std::set<Method> dropouts_;
    std::map<Method, std::map<size_t, size_t>> passThrough_; // returned element -> graph input
};

} // namespace

int returnWhatTracedBlocksReturn(torch::jit::Module& root)
{
    return Rewriter(root).run();
}

} // namespace torchscope
