#include "relevance/relevance_graph.h"

#include "relevance/graph_preparation.h"
#include "relevance/relevance_ops.h"

#include "common/error.h"
#include "common/strings.h"
#include "graph/instrumenter.h"
#include "model/torch_names.h"

#include <torch/csrc/jit/passes/dead_code_elimination.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace torchscope {
namespace {

using relevance::holdsTensors;
using relevance::isOp;
using relevance::isTensor;
using torch::jit::Graph;
using torch::jit::NamedValue;
using torch::jit::Node;
using torch::jit::Value;
using torch::jit::WithInsertPoint;

const std::initializer_list<const char*> Layers{"aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::convolution",
    "aten::_convolution", "aten::conv_transpose1d", "aten::conv_transpose2d", "aten::conv_transpose3d", "aten::linear"};
const std::initializer_list<const char*> Activations{"aten::relu", "aten::relu_", "aten::relu6", "aten::relu6_",
    "aten::hardtanh", "aten::hardtanh_", "aten::gelu", "aten::gelu_", "aten::silu", "aten::silu_", "aten::sigmoid",
    "aten::sigmoid_", "aten::tanh", "aten::tanh_", "aten::hardswish", "aten::hardswish_", "aten::hardsigmoid",
    "aten::hardsigmoid_", "aten::elu", "aten::elu_", "aten::leaky_relu", "aten::leaky_relu_", "aten::mish",
    "aten::mish_", "aten::softplus", "aten::selu", "aten::selu_", "aten::celu", "aten::celu_", "aten::prelu"};
const std::initializer_list<const char*> Pools{"aten::avg_pool1d", "aten::avg_pool2d", "aten::avg_pool3d",
    "aten::adaptive_avg_pool1d", "aten::adaptive_avg_pool2d", "aten::adaptive_avg_pool3d", "aten::mean"};
// Ops whose gradient moves relevance as LRP does: selection (max pooling), reshaping, copying.
const std::initializer_list<const char*> Moves{"aten::max_pool1d", "aten::max_pool2d", "aten::max_pool3d",
    "aten::max_pool2d_with_indices", "aten::adaptive_max_pool1d", "aten::adaptive_max_pool2d", "aten::flatten",
    "aten::view", "aten::reshape", "aten::dropout", "aten::dropout_", "aten::feature_dropout", "aten::alpha_dropout",
    "aten::contiguous", "aten::clone", "aten::cat", "aten::stack", "aten::slice", "aten::select", "aten::permute",
    "aten::transpose", "aten::t", "aten::squeeze", "aten::unsqueeze", "aten::expand", "aten::expand_as", "aten::size",
    "aten::dim", "aten::__getitem__", "aten::to", "aten::type_as", "aten::detach", "aten::pad", "aten::constant_pad_nd",
    "aten::chunk", "aten::split", "aten::unbind", "aten::narrow", "aten::len", "aten::append", "aten::list",
    "aten::__is__", "aten::__isnot__", "aten::warn", "aten::format", "aten::numel", "aten::is_floating_point",
    "aten::embedding", "aten::zeros_like", "aten::ones_like", "aten::sum", "aten::unflatten", "aten::movedim",
    "aten::split_with_sizes", "aten::unsafe_chunk", "aten::tensor_split", "aten::roll", "aten::repeat",
    "aten::new_full", "aten::new_zeros", "aten::new_ones", "aten::new_empty", "aten::full_like", "aten::empty_like",
    "aten::triu", "aten::triu_", "aten::tril", "aten::tril_"};
// Ops linear in one tensor that carries relevance (the others constants): bias-like terms absorb their
// share, factors none (the ε-rule's form, as Gradient × Input gives it).
const std::initializer_list<const char*> Linear{"aten::add", "aten::add_", "aten::sub", "aten::sub_", "aten::mul",
    "aten::mul_", "aten::div", "aten::div_", "aten::matmul", "aten::bmm"};
const std::initializer_list<const char*> Products{"aten::mul", "aten::mul_", "aten::matmul", "aten::bmm"};
const std::initializer_list<const char*> Softmaxes{"aten::softmax", "aten::_softmax"};
const std::initializer_list<const char*> FusedAttention{"aten::scaled_dot_product_attention"};

int weightRank(const Node* layer)
{
    if (isOp(layer, {"aten::linear"}))
        return 2;
    if (isOp(layer, {"aten::conv1d"}))
        return 3;
    if (isOp(layer, {"aten::conv2d"}))
        return 4;
    if (isOp(layer, {"aten::conv3d"}))
        return 5;
    if (isOp(layer, {"aten::convolution", "aten::_convolution"})) {
        const auto type = layer->input(1)->type()->cast<c10::TensorType>();
        const auto transposed = torch::jit::toIValue(layer->input(6));
        if (type && type->dim() && transposed && transposed->isBool() && !transposed->toBool())
            return static_cast<int>(*type->dim());
    }
    return 0; // transposed, or unknown: no batch norm merged into it
}

class RelevanceRewriter {
public:
    RelevanceRewriter(Graph& graph, const torch::jit::Module& module, const RelevanceSettings& settings,
        const std::vector<ResolvedRuleOverride>& overrides)
        : graph_(graph)
        , module_(module)
        , settings_(settings)
        , overrides_(overrides)
    { }

    RelevanceCoverage run()
    {
        relevance::registerRelevanceOps();
        relevance::prepareGraph(graph_, module_, inliner_);
        compositeRule(settings_.composite, LayerKind::Dense, false); // an unknown name throws now
        const auto& attentions = attentionRuleNames();
        if (std::find(attentions.begin(), attentions.end(), settings_.attention) == attentions.end())
            throw Error(
                "unknown attention rule '" + settings_.attention + "'; expected one of " + join(attentions, ", "));
        attnLrp_ = settings_.attention == "attnlrp";
        carriers_ = relevance::relevanceCarriers(graph_);
        if (!attnLrp_) {
            holdAttentionFixed(); // CP-LRP: nothing flows through the attention weights
            carriers_ = relevance::relevanceCarriers(graph_);
        }
        live_ = relevance::liveValues(graph_);
        std::vector<Node*> nodes;
        forEachNode(graph_.block(), [&](Node* node) { nodes.push_back(node); });
        markBeforeTheLayers(nodes);
        std::set<Node*> merged; // batch norms folded into their layer
        std::map<std::string, int> uncovered;
        for (Node* node : nodes) {
            if (merged.count(node) || !carries(node) || !live(node))
                continue;
            if (isOp(node, Layers))
                rewriteLayer(node, merged);
            else if (isOp(node, Activations))
                passThrough(node);
            else if (isOp(node, {"aten::add", "aten::add_"}) && sumOfTwo(node))
                splitSum(node);
            else if (isOp(node, Pools))
                normalise(node);
            else if (isOp(node, {"aten::layer_norm"}) && layerNorm(node))
                continue;
            else if (isOp(node, FusedAttention) && attention(node))
                continue;
            else if (attnLrp_ && isOp(node, Softmaxes) && feedsProduct(node))
                gradientTimesInput(node, {{0, 1.0}}, "softmax: gradient × input (attnlrp)");
            else if (isOp(node, Linear) && elementWiseAffine(node))
                continue;
            else if (isOp(node, {"aten::einsum"}) && einsum(node))
                continue;
            else if (attnLrp_ && isOp(node, Products) && productOfTwo(node))
                gradientTimesInput(
                    node, {{0, 0.5}, {1, 0.5}}, std::string(node->kind().toUnqualString()) + ": uniform (attnlrp)");
            else if (isOp(node, {"aten::_native_multi_head_attention"}) && node->owningBlock() != graph_.block())
                fastPathNotTaken(node);
            else if (node->kind().is_aten() && !isOp(node, Moves) && returnsTensor(node))
                ++uncovered[node->kind().toQualString() + std::string(" in ") + where(node)];
        }
        collapseRepeats(coverage_.layers);
        refuseOverridesThatRuleNothing();
        for (const auto& [what, count] : uncovered)
            coverage_.uncovered.push_back(
                what + " (" + std::to_string(count) + (count == 1 ? " node" : " nodes") + "): its plain gradient");
        torch::jit::EliminateDeadCode(graph_.block());
        graph_.lint();
        return coverage_;
    }

private:
    bool carries(const Node* node) const
    {
        for (const Value* input : node->inputs())
            if (carriers_.count(input))
                return true;
        return false;
    }
    bool live(const Node* node) const
    {
        for (const Value* output : node->outputs())
            if (live_.count(output))
                return true;
        return false;
    }

    // CP-LRP: a softmax that weighs values (its output multiplied into another tensor) is held fixed,
    // and a fused attention's queries and keys are.
    void holdAttentionFixed()
    {
        std::vector<Node*> nodes;
        forEachNode(graph_.block(), [&](Node* node) { nodes.push_back(node); });
        for (Node* node : nodes) {
            if (!carries(node))
                continue;
            if (isOp(node, Softmaxes) && feedsProduct(node)) {
                WithInsertPoint after(node->next());
                Value* fixed = stopped(node->output());
                node->output()->replaceAllUsesAfterNodeWith(fixed->node(), fixed);
                coverage_.layers.push_back(where(node) + " softmax: held fixed (cp)");
            } else if (isOp(node, FusedAttention)) {
                WithInsertPoint before(node);
                node->replaceInput(0, stopped(node->input(0)));
                node->replaceInput(1, stopped(node->input(1)));
            }
        }
    }

    // "x linear: epsilon" eleven times (the branches of nn.functional's attention) as one line, "(11 ops)".
    static void collapseRepeats(std::vector<std::string>& lines)
    {
        std::vector<std::string> out;
        std::map<std::string, size_t> at;
        std::vector<int> counts;
        for (const auto& line : lines) {
            if (const auto found = at.find(line); found != at.end()) {
                ++counts[found->second];
                continue;
            }
            at[line] = out.size();
            out.push_back(line);
            counts.push_back(1);
        }
        for (size_t i = 0; i < out.size(); ++i)
            if (counts[i] > 1)
                out[i] += " (" + std::to_string(counts[i]) + " ops)";
        lines = out;
    }

    // Zennit's Norm rule's stabiliser on sums and pooling; none for epsilon0 (LXT's exact split).
    double normStabiliser() const { return settings_.composite == "epsilon0" ? Tiny : 1e-6; }

    std::string where(const Node* node) const
    {
        const std::string path = inliner_.pathOf(node);
        return path.empty() ? std::string("the model's forward") : path;
    }

    // Whether the softmax's output weighs another tensor: multiplied into one, through dropout,
    // copies and casts.
    bool feedsProduct(const Node* node) const
    {
        for (const auto& use : node->output()->uses()) {
            if (isOp(use.user, {"aten::matmul", "aten::bmm", "aten::einsum"}))
                return true;
            if (use.user->kind() == c10::prim::ListConstruct) // einsum's operands
                for (const auto& listUse : use.user->output()->uses())
                    if (isOp(listUse.user, {"aten::einsum"}))
                        return true;
            if (isOp(use.user,
                    {"aten::dropout", "aten::dropout_", "aten::contiguous", "aten::to", "aten::type_as", "aten::clone",
                        "aten::feature_dropout"})
                && use.offset == 0 && use.user->outputs().size() == 1 && feedsProduct(use.user))
                return true;
        }
        return false;
    }

    // The node's output forward; backward, R_out / stab(out) through `numerator`'s gradient: the
    // ε form of every rule written as the op again on modified inputs.
    void carryRatio(Node* node, Value* numerator, double stabiliser)
    {
        Value* t = ratio(numerator, stabilised(node->output(), stabiliser));
        finish(node->output(), t, t->node());
    }

    // The op again with its input `index` as x ⊙ stop_grad(x): linear in x, its gradient is x ⊙ Jᵀ(·).
    Value* onSquared(Node* node, size_t index)
    {
        Value* x = node->input(index);
        Node* copy = graph_.createClone(node, [](Value* v) { return v; });
        copy->replaceInput(index, times(x, x));
        graph_.insertNode(copy);
        return copy->output();
    }

    // x forward; backward, its gradient times c·x (Gradient × Input's conversion at an input).
    Value* timesInput(Value* x, double c)
    {
        Value* scaled = op("aten::mul", {times(x, x), c});
        return op("aten::add", {stopped(x), op("aten::sub", {scaled, stopped(scaled)})});
    }

    // R_in,i = c_i · x_i ⊙ J_iᵀ (R_out / out): the op's own gradient between the conversions, for the
    // inputs listed (input index, c); the others as they are.
    void gradientTimesInput(Node* node, const std::vector<std::pair<size_t, double>>& inputs, const std::string& what)
    {
        node = outOfPlace(node);
        WithInsertPoint after(node->next());
        Node* copy = graph_.createClone(node, [](Value* v) { return v; });
        for (const auto& [index, c] : inputs)
            copy->replaceInput(index, timesInput(node->input(index), c));
        graph_.insertNode(copy);
        carryRatio(node, copy->output(), Tiny);
        coverage_.layers.push_back(where(node) + " " + what);
    }

    // The values computed from the inputs before any convolution or linear layer: the model's own
    // preprocessing ((x − mean) / std, a rescaling, a channel reorder inside forward). LRP's rules start at
    // the first layer; what comes before passes relevance on as it is (Zennit, given the normalised
    // input, explains the first layer's input: the same numbers at the same pixels).
    // Only the relevance-carrying tensors count, and a node's outputs are before the layers when every
    // carrier it reads is: a ViT's class token expanded by the input's batch size (an int read from it),
    // or a sum of the input and a layer's output, is not the model's preprocessing.
    void markBeforeTheLayers(const std::vector<Node*>& nodes)
    {
        for (size_t i = 1; i < graph_.inputs().size(); ++i)
            if (carriers_.count(graph_.inputs()[i]))
                beforeLayers_.insert(graph_.inputs()[i]);
        for (Node* node : nodes) {
            if (isOp(node, Layers))
                continue;
            bool carried = false, before = true;
            for (const Value* input : node->inputs())
                if (carriers_.count(input)) {
                    carried = true;
                    before = before && beforeLayers_.count(input);
                }
            if (carried && before)
                for (Value* output : node->outputs())
                    if (carriers_.count(output))
                        beforeLayers_.insert(output);
        }
    }

    // The rule a --rule override gives the ops of the module at `path`, if one names it; marks it used.
    std::optional<RelevanceRule> overrideAt(const std::string& path)
    {
        std::optional<RelevanceRule> rule;
        for (size_t i = 0; i < overrides_.size(); ++i)
            for (const auto& p : overrides_[i].paths)
                if (path == p || startsWith(path, p + ".")) {
                    rule = overrides_[i].rule;
                    used_.insert(i);
                }
        return rule;
    }

    // A --rule override that reached no op it could rule would change nothing: refused, saying why.
    void refuseOverridesThatRuleNothing() const
    {
        for (size_t i = 0; i < overrides_.size(); ++i)
            if (!used_.count(i)) {
                const std::string paths = join(overrides_[i].paths, ", ");
                throw Error("relevance rule '" + overrides_[i].rule.toString() + "' for " + paths
                    + ": no convolution, linear layer or element-wise affine op (add, sub, mul, div by a constant) "
                      "there carries relevance, so the rule would change nothing; name a layer, or a module whose "
                      "ops take pass, gradient, norm or epsilon");
            }
    }

    // add / sub / mul / div of the one input that carries relevance and constants (or values that carry
    // none): before the first layer, the identity (the model's own preprocessing); after it, linearInOne.
    // A --rule override on the op's module: pass (the identity), gradient (its plain gradient), norm or
    // epsilon (linearInOne); the layer rules are refused, naming the op.
    bool elementWiseAffine(Node* node)
    {
        const std::optional<size_t> carrying = carriedAlone(node);
        if (!carrying)
            return false;
        const std::string path = inliner_.pathOf(node);
        const std::string op = node->kind().toUnqualString();
        std::optional<RelevanceRule> rule = overrideAt(path);
        if (rule && rule->kind != RuleKind::Pass && rule->kind != RuleKind::Gradient && rule->kind != RuleKind::Norm
            && rule->kind != RuleKind::Epsilon)
            throw Error("relevance rule '" + rule->toString() + "' at '" + path + "': " + op
                + " there is an element-wise op, not a convolution or linear layer; it takes pass (the identity), "
                  "gradient, norm or epsilon");
        if (!rule && beforeLayers_.count(node->input(*carrying)))
            rule = RelevanceRule::parse("pass");
        if (rule && rule->kind == RuleKind::Gradient) {
            coverage_.layers.push_back(where(node) + " " + op + ": gradient");
            return true;
        }
        if (rule && rule->kind == RuleKind::Pass) {
            node = outOfPlace(node);
            const bool before = beforeLayers_.count(node->input(*carrying));
            Value* out = finish(node->output(), node->input(*carrying), node); // z forward, R_in = R_out backward
            if (before) // the next op of the preprocessing reads it: (x − mean) / std's division
                beforeLayers_.insert(out);
            coverage_.layers.push_back(where(node) + " " + op + ": pass" + (before ? " (before the first layer)" : ""));
            if (before && !firstSeen_ && preprocessedInside_.empty())
                preprocessedInside_ = op + " in " + where(node);
            return true;
        }
        return linearInOne(node, *carrying);
    }

    // The index (0 or 1) of the only input that carries relevance, for an op that is linear in it.
    std::optional<size_t> carriedAlone(const Node* node) const
    {
        if (node->outputs().size() != 1 || !isTensor(node->output()))
            return std::nullopt;
        std::vector<size_t> carrying;
        for (size_t i = 0; i < std::min<size_t>(node->inputs().size(), 2); ++i)
            if (carriers_.count(node->input(i)))
                carrying.push_back(i);
        for (size_t i = 2; i < node->inputs().size(); ++i)
            if (carriers_.count(node->input(i)))
                return std::nullopt;
        if (carrying.size() != 1)
            return std::nullopt;
        const bool sum = isOp(node, {"aten::add", "aten::add_", "aten::sub", "aten::sub_"});
        if (sum && !alphaIsOne(node))
            return std::nullopt;
        if (isOp(node, {"aten::div", "aten::div_"}) && carrying[0] != 0)
            return std::nullopt; // 1 / x is not linear
        return carrying[0];
    }

    // An op linear in the one input that carries relevance: what it adds absorbs its share.
    bool linearInOne(Node* node, size_t carried)
    {
        const bool sum = isOp(node, {"aten::add", "aten::add_", "aten::sub", "aten::sub_"});
        node = outOfPlace(node);
        Value* x = node->input(carried);
        WithInsertPoint after(node->next());
        Value* t;
        if (sum) {
            t = times(x, x); // the linear part; the constant is the bias
            if (carried == 1 && isOp(node, {"aten::sub"}))
                t = op("aten::neg", {t});
        } else {
            t = onSquared(node, carried);
        }
        carryRatio(node, t, Tiny);
        return true;
    }

    // nn.MultiheadAttention's fused fast path, in the branch its forward chooses at run time: PyTorch
    // takes it only where no gradient is asked, and relevance is one. Exported without that branch (the
    // op on the graph itself), it would run, and is named as uncovered.
    void fastPathNotTaken(Node* node)
    {
        coverage_.layers.push_back(where(node) + " _native_multi_head_attention: not taken (gradients rule it out)");
    }

    // Ops on lists (a list's `+` joins them) move tensors as they are.
    static bool returnsTensor(const Node* node)
    {
        for (const Value* output : node->outputs())
            if (isTensor(output))
                return true;
        return false;
    }

    bool productOfTwo(const Node* node) const
    {
        return node->inputs().size() >= 2 && node->outputs().size() == 1 && isTensor(node->input(0))
            && isTensor(node->input(1)) && carriers_.count(node->input(0)) && carriers_.count(node->input(1));
    }

    // An einsum of one operand that carries relevance (the ε form, as linearInOne), or of two under
    // AttnLRP (the uniform rule); its operands are a list built for it.
    bool einsum(Node* node)
    {
        Node* list = node->input(1)->node();
        if (list->kind() != c10::prim::ListConstruct || node->outputs().size() != 1)
            return false;
        std::vector<size_t> carrying;
        for (size_t i = 0; i < list->inputs().size(); ++i)
            if (carriers_.count(list->input(i)))
                carrying.push_back(i);
        const bool uniform = attnLrp_ && carrying.size() == 2;
        if (carrying.size() != 1 && !uniform)
            return false;
        WithInsertPoint after(node->next());
        std::vector<Value*> operands(list->inputs().begin(), list->inputs().end());
        for (size_t i : carrying)
            operands[i] = uniform ? timesInput(operands[i], 0.5) : times(operands[i], operands[i]);
        Node* operandList = graph_.insertNode(graph_.createList(list->output()->type()->containedType(0), operands));
        Node* copy = graph_.createClone(node, [](Value* v) { return v; });
        copy->replaceInput(1, operandList->output());
        graph_.insertNode(copy);
        carryRatio(node, copy->output(), Tiny);
        if (uniform)
            coverage_.layers.push_back(where(node) + " einsum: uniform (attnlrp)");
        return true;
    }

    // LayerNorm with its standard deviation held fixed: y = (x − mean) / σ · w + b is linear in x,
    // and takes the ε-rule's form (b absorbs its share). LXT's layer_norm_forward.
    bool layerNorm(Node* node)
    {
        const auto shape = torch::jit::toIValue(node->input(1));
        if (!shape || !shape->isIntList())
            return false;
        Value* w = nullptr;
        {
            WithInsertPoint before(node);
            w = concrete(node->input(2), /*runtime=*/true);
        }
        if (w && w->type()->cast<c10::OptionalType>())
            return false;
        const auto rank = static_cast<int64_t>(shape->toIntList().size());
        std::vector<int64_t> dims;
        for (int64_t d = -rank; d < 0; ++d)
            dims.push_back(d);
        Value* x = node->input(0);
        WithInsertPoint after(node->next());
        Value* axes = graph_.insertConstant(c10::IValue(dims));
        auto centred = [&](Value* v) { return difference(v, op("aten::mean", {v, axes, true})); };
        Value* deviation = centred(x);
        Value* variance = op("aten::mean", {op("aten::mul", {deviation, deviation}), axes, true});
        Value* sd = op("aten::sqrt", {op("aten::add", {variance, node->input(4)})});
        Value* linear = op("aten::div", {centred(times(x, x)), stopped(sd)});
        if (w)
            linear = op("aten::mul", {linear, w});
        carryRatio(node, linear, Tiny);
        coverage_.layers.push_back(where(node) + " layer_norm: σ held fixed");
        return true;
    }

    // A fused attention: CP-LRP's values through fixed weights (queries and keys were held fixed
    // before), AttnLRP's uniform rule (q, k a quarter each, v half).
    bool attention(Node* node)
    {
        if (node->outputs().size() != 1)
            return false;
        if (attnLrp_)
            gradientTimesInput(
                node, {{0, 0.25}, {1, 0.25}, {2, 0.5}}, "scaled_dot_product_attention: uniform (attnlrp)");
        else
            gradientTimesInput(node, {{2, 1.0}}, "scaled_dot_product_attention: values through fixed weights (cp)");
        return true;
    }

    Value* op(const char* name, std::vector<NamedValue> args)
    {
        return graph_.insert(c10::Symbol::fromQualString(name), args);
    }
    Value* none() { return graph_.insertConstant(c10::IValue()); }
    Value* stopped(Value* v) { return op("aten::detach", {v}); }
    // Zennit's stabilize: z + ε·sign(z), sign(0) = 1.
    Value* stabilised(Value* z, double epsilon)
    {
        Value* zero = op("aten::type_as", {op("aten::eq", {z, 0.0}), z});
        return op("aten::add", {z, op("aten::mul", {op("aten::add", {zero, op("aten::sign", {z})}), epsilon})});
    }
    // z forward, t's gradient backward.
    Value* combined(Value* z, Value* t) { return op("aten::add", {stopped(z), op("aten::sub", {t, stopped(t)})}); }
    Value* times(Value* x, Value* factor) { return op("aten::mul", {x, stopped(factor)}); }
    Value* difference(Value* a, Value* b) { return op("aten::sub", {a, b}); }
    Value* ratio(Value* t, Value* denominator) { return op("aten::div", {t, stopped(denominator)}); }

    RelevanceRule ruleFor(Node* node, const std::string& path, bool first)
    {
        const LayerKind kind = isOp(node, {"aten::linear"}) ? LayerKind::Dense : LayerKind::Convolution;
        return overrideAt(path).value_or(compositeRule(settings_.composite, kind, first));
    }

    void requireBounds(const std::string& path) const
    {
        if (settings_.low.empty() || settings_.low.size() != settings_.high.size())
            throw Error("the zbox rule (at '" + path
                + "') needs the input's lowest and highest values per channel: give the input setup's "
                  "normalisation (mean and std), or choose another rule for the first layer");
    }
    // zbox's bound per channel [C], as x's type.
    Value* channelValues(const std::vector<double>& values, Value* x)
    {
        return op("aten::type_as", {graph_.insertConstant(at::tensor(values).to(at::kFloat)), x});
    }

    // A convolution or linear layer, with the batch norm that follows it merged in.
    void rewriteLayer(Node* node, std::set<Node*>& merged)
    {
        const std::string path = inliner_.pathOf(node);
        const bool first = !firstSeen_;
        firstSeen_ = true;
        const RelevanceRule rule = ruleFor(node, path, first);
        std::string described = where(node) + " " + node->kind().toUnqualString();
        if (rule.kind == RuleKind::Pass)
            throw Error("relevance rule 'pass' at '" + path
                + "': it passes relevance on unchanged, which only an element-wise op can; a "
                  "convolution or linear layer takes epsilon, gamma, zplus, alphabeta, flat, wsquare, zbox or norm");
        if (rule.kind == RuleKind::Gradient) {
            coverage_.layers.push_back(described + ": gradient");
            return;
        }
        Value* x = node->input(0);
        Value* w = node->input(1);
        Value* b = nullptr;
        if (node->inputs().size() > 2) {
            WithInsertPoint before(node);
            b = concrete(node->input(2), /*runtime=*/true);
        }
        Value* output = node->output();
        Node* norm = nullptr;
        if (const auto eps = b && b->type()->cast<c10::OptionalType>() ? std::nullopt : foldableNorm(node, &norm)) {
            // Zennit's SequentialMergeBatchNorm, for any model: the merged layer's output goes
            // forward, as in Zennit's canonised model (the model's own within float rounding).
            WithInsertPoint atNorm(norm);
            const NormValues values{concrete(norm->input(1)), concrete(norm->input(2)), concrete(norm->input(3)),
                concrete(norm->input(4)), *eps};
            replace(norm->output(), ruleOp(node, x, w, b, rule, path, &values));
            merged.insert(norm);
            described += std::string(" + ") + norm->kind().toUnqualString() + std::string(" ") + inliner_.pathOf(norm)
                + " merged";
            coverage_.layers.push_back(described + ": " + rule.toString());
            return;
        }
        WithInsertPoint after(node->next());
        replace(output, ruleOp(node, x, w, b, rule, path));
        coverage_.layers.push_back(described + ": " + rule.toString());
    }

    // An optional tensor as what it is in the loaded module: nullptr for None, else the tensor (a
    // scripted Conv2d's bias is typed Optional[Tensor] in the graph, whatever the module holds). What
    // only the run can tell (a bias a branch of nn.functional chose) stays Optional where `runtime`
    // allows: the rule's op takes it as it comes.
    Value* concrete(Value* value, bool runtime = false)
    {
        if (value->mustBeNone())
            return nullptr;
        if (!value->type()->cast<c10::OptionalType>())
            return value;
        const Node* read = value->node();
        if (read->kind() == c10::prim::GetAttr) {
            const auto owners = modulePaths(graph_);
            if (const auto owner = owners.find(read->input(0)); owner != owners.end())
                if (const auto holder = relevance::moduleAt(module_, owner->second)) {
                    if (holder->attr(read->s(c10::attr::name)).isNone())
                        return nullptr;
                    return graph_.insertUncheckedCast(value, c10::TensorType::get());
                }
        }
        if (runtime)
            return value;
        throw Error("a layer's optional " + value->debugName()
            + " cannot be resolved to a tensor or None: TorchScope cannot apply an LRP rule to it");
    }

    // A batch norm in evaluation that reads this layer's output, which nothing else reads but for
    // its shape (BatchNorm2d checks the input's dim first). Its eps, or nullopt.
    std::optional<double> foldableNorm(Node* layerNode, Node** norm) const
    {
        if (weightRank(layerNode) == 0)
            return std::nullopt;
        Node* found = nullptr;
        for (const auto& use : layerNode->output()->uses()) {
            if (isOp(use.user, {"aten::batch_norm"}) && use.offset == 0 && !found) {
                found = use.user;
                continue;
            }
            for (const Value* output : use.user->outputs())
                if (holdsTensors(output->type()))
                    return std::nullopt;
        }
        if (!found || found->input(3)->mustBeNone() || found->input(4)->mustBeNone())
            return std::nullopt;
        auto training = torch::jit::toIValue(found->input(5));
        auto eps = torch::jit::toIValue(found->input(7));
        if (!training || !eps) { // read from the module it came from (nn.BatchNorm*d in evaluation)
            const auto holder = relevance::moduleAt(module_, inliner_.pathOf(found));
            if (!holder || !holder->hasattr("eps") || !holder->hasattr("running_mean"))
                return std::nullopt;
            if (!training)
                training = c10::IValue(holder->is_training() || holder->attr("running_mean").isNone());
            if (!eps)
                eps = holder->attr("eps");
        }
        if (!training->isBool() || training->toBool() || !eps->isDouble())
            return std::nullopt;
        *norm = found;
        return eps->toDouble();
    }

    // `output` (the model's value, or `forward` in its place) forward, t backward, from just after
    // `after` on.
    Value* finish(Value* output, Value* t, Node* after, Value* forward = nullptr)
    {
        WithInsertPoint insert(after->next());
        Value* out = combined(forward ? forward : output, t);
        output->replaceAllUsesAfterNodeWith(out->node(), out);
        carriers_.insert(out); // the ops after it are rewritten too
        return out;
    }

    // An in-place op as its out-of-place twin (the rules read its input after it ran).
    Node* outOfPlace(Node* node)
    {
        const std::string name = node->kind().toQualString();
        if (name.back() != '_' || endsWith(name, "__"))
            return node;
        WithInsertPoint before(node);
        Node* twin = graph_.create(c10::Symbol::fromQualString(name.substr(0, name.size() - 1)), node->inputs(), 1);
        twin->output()->setType(node->output()->type());
        graph_.insertNode(twin);
        inliner_.tag(twin, inliner_.pathOf(node));
        carriers_.insert(twin->output());
        Value* self = node->input(0);
        node->output()->replaceAllUsesWith(twin->output());
        self->replaceAllUsesAfterNodeWith(node, twin->output());
        node->destroy();
        return twin;
    }

    // The identity rule: R passes on unchanged. lrp_pass returns the op's output itself, which an
    // in-place op after it must not change (autograd forbids it): there, x's own path.
    void passThrough(Node* node)
    {
        node = outOfPlace(node);
        if (mutated(node->output())) {
            finish(node->output(), node->input(0), node); // t = x: the gradient passes as it is
            return;
        }
        WithInsertPoint after(node->next());
        replace(node->output(), op(relevance::PassOp, {stopped(node->output()), node->input(0)}));
    }

    static bool mutated(const Value* value)
    {
        for (const auto& use : value->uses()) {
            const std::string name = use.user->kind().toQualString();
            if (name.back() == '_' && !endsWith(name, "__"))
                return true;
        }
        return false;
    }

    // `output`'s uses after `out`'s node read `out`, which is rewritten in turn.
    void replace(Value* output, Value* out)
    {
        output->replaceAllUsesAfterNodeWith(out->node(), out);
        carriers_.insert(out);
    }

    // The layer with its rule as one operator (relevance_ops.h), the rule's terms computed in the
    // backward pass alone.
    // A batch norm merged into the layer: its weight, bias (nullptr: none), running mean, variance, ε.
    struct NormValues {
        Value *weight, *bias, *mean, *variance;
        double eps;
    };

    Value* ruleOp(Node* node, Value* x, Value* w, Value* b, const RelevanceRule& rule, const std::string& path,
        const NormValues* norm = nullptr)
    {
        // stride, padding, padding's name, dilation, output padding, transposed, groups
        Value* empty = graph_.insertConstant(c10::IValue(std::vector<int64_t>{}));
        Value* numeric = graph_.insertConstant(std::string());
        Value* no = graph_.insertConstant(false);
        std::vector<NamedValue> geometry;
        const auto in = [&](size_t i) { return node->input(i); };
        if (isOp(node, {"aten::linear"})) {
            geometry = {empty, empty, numeric, empty, empty, no, graph_.insertConstant(1)};
        } else if (isOp(node, {"aten::conv1d", "aten::conv2d", "aten::conv3d"})) {
            const bool named = in(4)->type()->kind() == c10::TypeKind::StringType;
            geometry = {in(3), named ? empty : in(4), named ? in(4) : numeric, in(5), empty, no, in(6)};
        } else if (isOp(node, {"aten::conv_transpose1d", "aten::conv_transpose2d", "aten::conv_transpose3d"})) {
            geometry = {in(3), in(4), numeric, in(7), in(5), graph_.insertConstant(true), in(6)};
        } else { // aten::convolution, aten::_convolution
            geometry = {in(3), in(4), numeric, in(5), in(7), in(6), in(8)};
        }
        Value* low = none();
        Value* high = none();
        if (rule.kind == RuleKind::ZBox) {
            requireBounds(path);
            if (!preprocessedInside_.empty())
                throw Error("the zbox rule (at '" + path + "') bounds the layer's input by the input setup's values, "
                    + "but the model transforms its input first (" + preprocessedInside_
                    + "): those bounds are not the layer's; normalise outside the model (the input setup's mean and "
                      "std), or choose another rule for the first layer (--rule "
                    + path + "=flat)");
            low = channelValues(settings_.low, x);
            high = channelValues(settings_.high, x);
        }
        const auto orNone = [&](Value* v) { return v ? v : none(); };
        std::vector<NamedValue> args{x, w, orNone(b)};
        if (norm)
            args.insert(args.end(),
                {orNone(norm->weight), orNone(norm->bias), norm->mean, norm->variance,
                    graph_.insertConstant(norm->eps)});
        else
            args.insert(args.end(), {none(), none(), none(), none(), graph_.insertConstant(0.0)});
        args.insert(args.end(), geometry.begin(), geometry.end());
        args.emplace_back(graph_.insertConstant(static_cast<int64_t>(rule.kind)));
        args.emplace_back(
            graph_.insertConstant(c10::IValue(std::vector<double>{rule.epsilon, rule.gamma, rule.alpha, rule.beta})));
        args.emplace_back(low);
        args.emplace_back(high);
        args.emplace_back(graph_.insertConstant(nonNegative(x)));
        return op(relevance::LayerOp, args);
    }

    // Whether the graph makes `value` nowhere negative: a ReLU's (or a sigmoid's, a softmax's)
    // output, through pooling, reshaping and the identity rule.
    static bool nonNegative(const Value* value)
    {
        const Node* node = value->node();
        if (isOp(node,
                {"aten::relu", "aten::relu_", "aten::relu6", "aten::relu6_", "aten::sigmoid", "aten::sigmoid_",
                    "aten::hardsigmoid", "aten::hardsigmoid_", "aten::softmax", "aten::_softmax"}))
            return true;
        if (node->kind() == c10::Symbol::fromQualString(relevance::PassOp))
            return nonNegative(node->input(0)); // the op's own output
        if (isOp(node,
                {"aten::max_pool1d", "aten::max_pool2d", "aten::max_pool3d", "aten::adaptive_max_pool1d",
                    "aten::adaptive_max_pool2d", "aten::flatten", "aten::view", "aten::reshape", "aten::dropout",
                    "aten::contiguous", "aten::clone", "aten::detach", "aten::permute", "aten::transpose"})
            && value == node->output(0))
            return nonNegative(node->input(0));
        return false;
    }

    // add / sub's third input, alpha, is 1 (or absent): the op is a plain sum or difference.
    static bool alphaIsOne(const Node* node)
    {
        if (node->inputs().size() <= 2)
            return true;
        const auto alpha = torch::jit::toIValue(node->input(2));
        return alpha && ((alpha->isInt() && alpha->toInt() == 1) || (alpha->isDouble() && alpha->toDouble() == 1.0));
    }

    bool sumOfTwo(const Node* node) const
    {
        if (node->inputs().size() < 2 || !isTensor(node->input(0)) || !isTensor(node->input(1)))
            return false;
        return alphaIsOne(node) && carriers_.count(node->input(0)) && carriers_.count(node->input(1));
    }

    // A residual sum: each term keeps its share (norm), so the two branches do not both get all.
    void splitSum(Node* node)
    {
        node = outOfPlace(node);
        Value* a = node->input(0);
        Value* b = node->input(1);
        WithInsertPoint after(node->next());
        replace(node->output(), op(relevance::SumOp, {a, b, normStabiliser()}));
        coverage_.layers.push_back(where(node) + " sum: norm");
    }

    // Average pooling and means: linear, norm (Zennit's AvgPool rule).
    void normalise(Node* node)
    {
        WithInsertPoint after(node->next());
        carryRatio(node, onSquared(node, 0), normStabiliser());
        coverage_.layers.push_back(where(node) + " " + node->kind().toUnqualString() + ": norm");
    }

    Graph& graph_;
    const torch::jit::Module& module_;
    const RelevanceSettings& settings_;
    const std::vector<ResolvedRuleOverride>& overrides_;
    relevance::Inliner inliner_;
    relevance::ValueSet carriers_, live_;
    bool attnLrp_ = false;
    // The stabiliser of the Gradient × Input conversions (LXT has none): only an exact zero is moved.
    static constexpr double Tiny = 1e-12;
    RelevanceCoverage coverage_;
    bool firstSeen_ = false;
    relevance::ValueSet beforeLayers_; // markBeforeTheLayers
    std::string preprocessedInside_; // the first affine op before the first layer ("sub in normalize")
    std::set<size_t> used_; // the overrides that ruled an op
};

} // namespace

RelevanceCoverage rewriteForRelevance(Graph& graph, const torch::jit::Module& module, const RelevanceSettings& settings,
    const std::vector<ResolvedRuleOverride>& overrides)
{
    return RelevanceRewriter(graph, module, settings, overrides).run();
}

} // namespace torchscope
