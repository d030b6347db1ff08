#include "graph/instrumenter.h"

#include "common/error.h"
#include "common/strings.h"
#include "graph/attention_taps.h"
#include "graph/edit_functions.h"
#include "graph/write_analysis.h"
#include "model/torch_names.h"

#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>

#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

namespace torchscope {

using torch::jit::Block;
using torch::jit::Graph;
using torch::jit::Node;
using torch::jit::Value;
using torch::jit::WithInsertPoint;

bool ResolvedRequest::needsGradients() const
{
    for (const auto& c : captures)
        if (c.kind == CaptureKind::Gradient)
            return true;
    return false;
}

std::string ResolvedRequest::cacheKey() const
{
    std::ostringstream key;
    for (const auto& c : captures)
        key << c.key << ';';
    key << "|t=" << truncateAt.value_or("");
    for (const auto& e : edits)
        key << "|e=" << e.cacheKey();
    key << "|a=" << attentionInPath << "|p=" << grabsOnPath;
    if (relevance)
        key << "|r=" << relevance->cacheKey();
    return key.str();
}

namespace {

bool isForwardCall(const Node* node)
{
    return isForwardMethodName(node->s(c10::attr::name));
}

bool isStrictAncestor(const std::string& ancestor, const std::string& path)
{
    return ancestor.empty() ? !path.empty() : startsWith(path, ancestor + ".");
}

std::string describeEnclosingBlock(const Node* node)
{
    for (auto* block = node->owningBlock(); block->owningNode(); block = block->owningNode()->owningBlock()) {
        const Node* owner = block->owningNode();
        if (owner->kind() == c10::prim::If || owner->kind() == c10::prim::Loop) {
            const std::string where = sourceLocation(owner);
            return std::string(owner->kind() == c10::prim::If ? "inside an if-branch" : "inside a loop")
                + (where.empty() ? "" : " (at " + where + ")");
        }
    }
    return "inside a nested block";
}

Value* insertClone(Graph& graph, Value* value)
{
    return graph.insert(c10::aten::clone, {value});
}

class Instrumenter {
public:
    Instrumenter(const torch::jit::Module& module, const ResolvedRequest& request)
        : module_(module)
        , request_(request)
    { }

    std::shared_ptr<InstrumentedFunction> build()
    {
        auto& forward = torch::jit::toGraphFunction(module_.get_method("forward").function());
        graph_ = forward.graph()->copy();
        result_ = std::make_shared<InstrumentedFunction>();
        result_->slots = request_.captures;

        std::set<std::string> targets;
        for (const auto& c : request_.captures)
            targets.insert(c.path);
        for (const auto& e : request_.edits)
            targets.insert(e.path);
        if (request_.truncateAt)
            targets.insert(*request_.truncateAt);

        addEditInputs();
        instrumentAndInline(targets);
        finishOutputs();
        // After the outputs are in place: the rewrite's passes (peephole, constant propagation) may
        // replace the lists the grabs collect in, and only the graph's own uses follow.
        if (request_.relevance)
            result_->relevance = rewriteForRelevance(*graph_, module_, *request_.relevance, request_.ruleOverrides);
        graph_->lint();
        if (std::getenv("TORCHSCOPE_DUMP_GRAPH"))
            std::cerr << "instrumented graph:\n" << *graph_ << '\n';

        const auto mode = request_.needsGradients() || request_.attentionInPath || request_.relevance
            ? c10::optional<torch::jit::ExecutorExecutionMode>(torch::jit::ExecutorExecutionMode::SIMPLE)
            : c10::nullopt;
        // Gradients w.r.t. returned intermediates come back undefined once the profiling executor
        // fuses the graph into a DifferentiableGraph, hence the simple executor for them.
        result_->function
            = std::make_shared<torch::jit::GraphFunction>("torchscope.instrumented_forward", graph_, nullptr, mode);
        return result_;
    }

private:
    // Taps every call of a target, then inlines the calls on strict ancestors of targets, one
    // level at a time, so that deeper targets' calls appear; repeats until none is left. A target
    // that is itself an ancestor is tapped before it is inlined: the taps around its call stay.
    void instrumentAndInline(const std::set<std::string>& targets)
    {
        std::set<std::string> found;
        while (true) {
            const auto paths = modulePaths(*graph_);
            std::vector<std::pair<Node*, std::string>> targetCalls, toInline;
            forEachNode(graph_->block(), [&](Node* node) {
                if (node->kind() != c10::prim::CallMethod)
                    return;
                const auto it = paths.find(node->input(0));
                if (it == paths.end())
                    return;
                if (isForwardCall(node) && targets.count(it->second) && !tapped_.count(node))
                    targetCalls.emplace_back(node, it->second);
                for (const auto& target : targets)
                    if (isStrictAncestor(it->second, target)) {
                        toInline.emplace_back(node, it->second);
                        break;
                    }
            });
            std::set<Node*> inlined;
            for (const auto& [node, path] : targetCalls) {
                instrumentCall(path, node);
                found.insert(path);
                if (grabsAttention(path)) {
                    inlineAndTapAttention(path, node);
                    inlined.insert(node);
                } else {
                    tapped_.insert(node);
                }
            }
            if (toInline.empty() && inlined.empty())
                break;
            for (const auto& [node, path] : toInline) {
                if (inlined.count(node))
                    continue;
                tapped_.erase(node); // the node is destroyed; its address may be reused
                inlineModuleCall(node, path);
            }
        }
        for (const auto& target : targets)
            if (!found.count(target))
                throw Error("module '" + target
                    + "' is never called by the model's forward (it may be unused, or called only "
                      "from code TorchScope cannot inline)");
        for (size_t s = 0; s < result_->slots.size(); ++s)
            if (!lists_[s])
                throw Error("'" + result_->slots[s].key + "' cannot be grabbed: its module is never called");
    }

    bool grabsAttention(const std::string& path) const
    {
        for (const auto& slot : result_->slots)
            if (slot.path == path && slot.kind == CaptureKind::Attention)
                return true;
        return false;
    }

    // The module's own code (and the functions it calls) comes into the graph, so that its
    // attention can be found and computed beside the model's kernel; its submodules stay calls.
    void inlineAndTapAttention(const std::string& path, Node* call)
    {
        Node* before = call->prev();
        Node* end = call->next();
        inlineModuleCall(call, path);
        inlineFunctionCalls(before->next(), end);
        const auto taps = tapAttention(*graph_, before->next(), end, request_.attentionInPath);
        for (size_t s = 0; s < result_->slots.size(); ++s) {
            const auto& slot = result_->slots[s];
            if (slot.path != path || slot.kind != CaptureKind::Attention)
                continue;
            if (taps.empty())
                throw Error("'" + slot.key + "': module '" + path
                    + "' computes no attention in its own code (no scaled_dot_product_attention, "
                      "nn.MultiheadAttention or softmax over q·kᵀ); the module tree marks the modules that do");
            for (const auto& tap : taps) {
                Value* p = tap.probabilities;
                WithInsertPoint after(p->node()->next());
                const bool copy = !request_.attentionInPath
                    && (writes_.mayBeWritten(p) || (tap.modelsOwn && writes_.mayBeWritten(tap.modelsOwn)));
                append(s, copy ? insertClone(*graph_, p) : p);
            }
        }
    }

    void addEditInputs()
    {
        for (size_t i = 0; i < request_.edits.size(); ++i)
            for (int t = 0; t < request_.edits[i].tensorCount(); ++t)
                editTensors_[i].push_back(graph_->addInput("edit_tensor_" + std::to_string(i) + "_" + std::to_string(t))
                                              ->setType(c10::TensorType::get()));
        lists_.assign(result_->slots.size(), nullptr);
    }

    // The list collecting a slot's values, created at graph entry on the slot's first call (a
    // value captured inside an if or a loop is not visible at top level; the list is).
    Value* listFor(size_t s, const c10::TypePtr& type)
    {
        const auto& slot = result_->slots[s];
        if (slot.kind == CaptureKind::Gradient && !type->isSubtypeOf(*c10::TensorType::get()))
            throw Error("'" + slot.key + "': a gradient needs a tensor output, but module '" + slot.path + "' returns "
                + type->annotation_str());
        if (!lists_[s]) {
            auto* list = graph_->createList(type, {});
            graph_->prependNode(list);
            lists_[s] = list->output();
        }
        return lists_[s];
    }

    void append(size_t slot, Value* value) { graph_->insert(c10::aten::append, {listFor(slot, value->type()), value}); }

    void instrumentCall(const std::string& path, Node* call)
    {
        {
            WithInsertPoint before(call);
            for (size_t s = 0; s < result_->slots.size(); ++s) {
                const auto& slot = result_->slots[s];
                if (slot.path != path || slot.kind != CaptureKind::Input)
                    continue;
                // The inputs as they were before the module ran, even if it or a later op works
                // in place on them.
                const size_t index = static_cast<size_t>(slot.inputIndex) + 1;
                if (index >= call->inputs().size())
                    throw Error("'" + slot.key + "': module '" + path + "' takes "
                        + std::to_string(call->inputs().size() - 1) + " input(s), so in"
                        + std::to_string(slot.inputIndex) + " does not exist");
                Value* input = call->input(index);
                const bool isTensor = input->type()->isSubtypeOf(*c10::TensorType::get());
                append(s, isTensor && writes_.mayBeWritten(input) ? insertClone(*graph_, input) : input);
            }
        }

        Node* anchor = call->next();
        WithInsertPoint after(anchor);
        Value* original = call->output();
        Value* current = original;
        for (size_t e = 0; e < request_.edits.size(); ++e)
            if (request_.edits[e].path == path)
                current = insertEdit(*graph_, current, request_.edits[e],
                    editTensors_.count(e) ? editTensors_.at(e) : std::vector<Value*>{});
        if (current != original)
            original->replaceAllUsesAfterNodeWith(anchor->prev(), current);

        for (size_t s = 0; s < result_->slots.size(); ++s) {
            const auto& slot = result_->slots[s];
            if (slot.path != path || slot.kind == CaptureKind::Input || slot.kind == CaptureKind::Attention)
                continue;
            const bool isTensor = current->type()->isSubtypeOf(*c10::TensorType::get());
            if (slot.kind == CaptureKind::Output && (!request_.grabsOnPath || !isTensor)) {
                // A copy only where a later in-place op (ReLU(inplace=True), +=) could change the
                // tensor we return. Containers are kept as they are.
                append(s, isTensor && writes_.mayBeWritten(current) ? insertClone(*graph_, current) : current);
            } else {
                // Keep the true output for autograd and let the rest of the network work on a
                // copy: a following in-place op must not rebase the value we differentiate by.
                append(s, current);
                Value* copy = insertClone(*graph_, current);
                current->replaceAllUsesAfterNodeWith(copy->node(), copy);
                current = copy;
            }
        }
        if (request_.truncateAt == path) {
            // The truncation output goes through a list of our own too: the call node and its
            // output value are replaced when a deeper target makes us inline this module.
            if (!truncationList_) {
                auto* list = graph_->createList(current->type(), {});
                graph_->prependNode(list);
                truncationList_ = list->output();
            }
            Node* marker = graph_->insert(c10::aten::append, {truncationList_, current})->node();
            if (!truncationEnd_ || call->isBefore(truncationEnd_)) {
                truncationProblem_ = call->owningBlock() == graph_->block() ? "" : describeEnclosingBlock(call);
                truncationEnd_ = marker;
            }
        }
    }

    void finishOutputs()
    {
        // Read only now: edits and gradient taps may have replaced the value forward returns.
        Value* originalOutput = graph_->outputs()[0];
        while (!graph_->outputs().empty())
            graph_->eraseOutput(graph_->outputs().size() - 1);
        std::vector<Value*> outputs;
        if (truncationEnd_) {
            cutAfterTruncation();
            WithInsertPoint end(graph_->block()->return_node());
            outputs.push_back(graph_->insert(c10::aten::__getitem__, {truncationList_, 0}));
        } else {
            outputs.push_back(originalOutput);
        }
        outputs.insert(outputs.end(), lists_.begin(), lists_.end());
        WithInsertPoint end(graph_->block()->return_node());
        graph_->registerOutput(graph_->insertNode(graph_->createTuple(outputs))->output());
        if (truncationEnd_)
            torch::jit::EliminateDeadCode(graph_);
    }

    // Work after the truncation point must not run. Dead-code elimination alone removes nothing
    // (calls, in-place ops, assertions and loops count as side effects), so cut the top level.
    void cutAfterTruncation()
    {
        if (!truncationProblem_.empty())
            throw Error("cannot truncate at '" + *request_.truncateAt + "': its first call is " + truncationProblem_
                + ", so whether and how often it runs depends on the input; truncate at a module "
                  "outside that block");
        std::vector<Node*> after;
        for (Node* n = truncationEnd_->next(); n != graph_->block()->return_node(); n = n->next())
            after.push_back(n);
        for (auto it = after.rbegin(); it != after.rend(); ++it)
            (*it)->destroy();

        for (size_t s = 0; s < result_->slots.size(); ++s) {
            bool appended = false;
            for (const auto& use : lists_[s]->uses())
                appended = appended || use.user->kind() == c10::aten::append;
            if (!appended)
                result_->warnings.push_back("'" + result_->slots[s].key + "' runs only after the truncation point '"
                    + *request_.truncateAt + "', so nothing was grabbed");
        }
    }

    const torch::jit::Module& module_;
    const ResolvedRequest& request_;
    std::shared_ptr<Graph> graph_;
    std::shared_ptr<InstrumentedFunction> result_;
    std::set<Node*> tapped_;
    WriteAnalysis writes_;
    std::map<size_t, std::vector<Value*>> editTensors_;
    std::vector<Value*> lists_;
    std::string truncationProblem_;
    Value* truncationList_ = nullptr;
    Node* truncationEnd_ = nullptr;
};

} // namespace

void inlineModuleCall(Node* node, const std::string& path)
{
    const auto classType = node->input(0)->type()->cast<c10::ClassType>();
    if (!classType)
        throw Error("module '" + path + "' is called through an interface type; TorchScope cannot look inside it");
    auto& callee = torch::jit::toGraphFunction(classType->getMethod(node->s(c10::attr::name)));
    // This overload inlines the callee's own graph (with its submodule calls intact); the bool
    // overload would take the optimized, fully inlined graph and erase the module boundaries.
    torch::jit::inlineCallTo(node, &callee, callee.graph().get());
}

std::shared_ptr<InstrumentedFunction> instrument(const torch::jit::Module& module, const ResolvedRequest& request)
{
    return Instrumenter(module, request).build();
}

} // namespace torchscope
