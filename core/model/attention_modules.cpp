#include "model/attention_modules.h"

#include "model/torch_names.h"

#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/jit.h>

#include <functional>

namespace torchscope {

using torch::jit::Block;
using torch::jit::Node;
using torch::jit::Value;

bool isKind(const Node* node, const char* qualified)
{
    return node->kind() == c10::Symbol::fromQualString(qualified);
}

void forEachNodeBetween(Node* first, Node* end, const std::function<void(Node*)>& visit)
{
    for (Node* node = first; node != end; node = node->next()) {
        visit(node);
        for (Block* block : node->blocks())
            forEachNode(block, visit);
    }
}

namespace {

// Does `value` come from a product of two tensors (q kᵀ), through additions, scalings, masks and
// reshapes? `depth` bounds the search.
bool comesFromProduct(const Value* value, int depth)
{
    if (depth == 0)
        return false;
    const Node* node = value->node();
    for (const char* product : {"aten::matmul", "aten::bmm", "aten::baddbmm", "aten::einsum"})
        if (isKind(node, product))
            return true;
    if (node->kind() == c10::prim::If) {
        const size_t offset = value->offset();
        for (const Block* block : node->blocks())
            if (comesFromProduct(block->outputs()[offset], depth - 1))
                return true;
        return false;
    }
    for (const char* passing : {"aten::add", "aten::sub", "aten::mul", "aten::div", "aten::masked_fill", "aten::view",
             "aten::reshape", "aten::to", "aten::contiguous", "aten::unsqueeze", "aten::squeeze", "aten::type_as"})
        if (isKind(node, passing)) {
            for (const Value* input : node->inputs())
                if (input->type()->isSubtypeOf(*c10::TensorType::get()) && comesFromProduct(input, depth - 1))
                    return true;
            return false;
        }
    return false;
}

// Do the probabilities go on into a product with the values (attn @ v), through dropout, views and
// if-branches? A router's softmax(x W) does not: that is what tells it from attention.
bool feedsProduct(const Value* value, int depth)
{
    if (depth == 0)
        return false;
    for (const auto& use : value->uses()) {
        const Node* user = use.user;
        for (const char* product : {"aten::matmul", "aten::bmm", "aten::einsum", "aten::baddbmm"})
            if (isKind(user, product))
                return true;
        if (user->kind() == c10::prim::ListConstruct && feedsProduct(user->output(), depth - 1))
            return true; // einsum's operand list
        if (user->kind() == c10::prim::Return && user->owningBlock()->owningNode()
            && user->owningBlock()->owningNode()->kind() == c10::prim::If
            && feedsProduct(user->owningBlock()->owningNode()->output(use.offset), depth - 1))
            return true;
        // A dropout module (timm's attn_drop) is a call: its result goes on.
        for (const char* passing : {"aten::dropout", "aten::feature_dropout", "aten::contiguous", "aten::view",
                 "aten::reshape", "aten::to", "aten::type_as", "prim::CallMethod"})
            if (isKind(user, passing) && user->outputs().size() == 1 && feedsProduct(user->output(), depth - 1))
                return true;
    }
    return false;
}

bool isAttentionSoftmax(const Node* node)
{
    if (!isKind(node, "aten::softmax") || node->inputs().size() < 2)
        return false;
    // F.softmax hands its dim on through an if (dim may be None), so a dim that is not a constant
    // is taken: the product before it is what marks attention.
    const auto dim = torch::jit::toIValue(node->input(1));
    const auto rank = node->input(0)->type()->expectRef<c10::TensorType>().dim();
    const bool lastDim
        = !dim || !dim->isInt() || dim->toInt() == -1 || (rank && dim->toInt() == static_cast<int64_t>(*rank) - 1);
    return lastDim && comesFromProduct(node->input(0), 8) && feedsProduct(node->output(), 8);
}

} // namespace

bool isAttentionNode(const Node* node)
{
    return isKind(node, "aten::scaled_dot_product_attention") || isKind(node, "aten::_native_multi_head_attention")
        || isAttentionSoftmax(node);
}

void inlineFunctionCalls(Node* first, Node* end)
{
    Node* before = first->prev();
    while (true) {
        std::vector<std::pair<Node*, torch::jit::GraphFunction*>> calls;
        forEachNodeBetween(before->next(), end, [&](Node* node) {
            if (node->kind() != c10::prim::CallFunction)
                return;
            const auto type = node->input(0)->type()->cast<c10::FunctionType>();
            if (auto* function = type ? torch::jit::tryToGraphFunction(*type->function()) : nullptr)
                calls.emplace_back(node, function);
        });
        if (calls.empty())
            return;
        for (auto& [call, function] : calls) {
            call->removeInput(0); // the function constant: the callee's inputs are the rest
            torch::jit::inlineCallTo(call, function, function->graph().get());
        }
    }
}

bool computesAttention(const torch::jit::Module& module)
{
    const auto forward = module.find_method("forward");
    if (!forward)
        return false;
    const auto graph = torch::jit::toGraphFunction(forward->function()).graph()->copy();
    Node* end = graph->block()->return_node();
    inlineFunctionCalls(graph->block()->nodes().front(), end);
    bool found = false;
    forEachNodeBetween(
        graph->block()->nodes().front(), end, [&](Node* node) { found = found || isAttentionNode(node); });
    return found;
}

} // namespace torchscope
