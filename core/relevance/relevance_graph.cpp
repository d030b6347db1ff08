#include "relevance/relevance_graph.h"

#include "common/error.h"
#include "common/strings.h"
#include "graph/instrumenter.h"
#include "model/torch_names.h"

#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>

#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace torchscope {
namespace {

using torch::jit::Graph;
using torch::jit::NamedValue;
using torch::jit::Node;
using torch::jit::Value;
using torch::jit::WithInsertPoint;

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

// Every module and function call inlined, each op remembering the module it came from.
class Inliner {
public:
    void run(Graph& graph)
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
            for (Node* node = before->next(); node != after; node = node->next())
                paths_[node] = path;
        }
    }

    void tag(const Node* node, const std::string& path) { paths_[node] = path; }

    // The module an op came from ("" for the model's own forward).
    std::string pathOf(const Node* node) const
    {
        for (; node; node = node->owningBlock()->owningNode())
            if (const auto found = paths_.find(node); found != paths_.end())
                return found->second;
        return {};
    }

private:
    std::unordered_map<const Node*, std::string> paths_;
};

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
    "aten::embedding", "aten::zeros_like", "aten::ones_like", "aten::sum"};

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

class Rewriter {
public:
    Rewriter(Graph& graph, const torch::jit::Module& module, const RelevanceSettings& settings,
        const std::vector<ResolvedRuleOverride>& overrides)
        : graph_(graph)
        , module_(module)
        , settings_(settings)
        , overrides_(overrides)
    { }

    RelevanceCoverage run()
    {
        inliner_.run(graph_);
        compositeRule(settings_.composite, LayerKind::Dense, false); // an unknown name throws now
        markCarriers();
        std::vector<Node*> nodes;
        forEachNode(graph_.block(), [&](Node* node) { nodes.push_back(node); });
        std::set<Node*> merged; // batch norms folded into their layer
        std::map<std::string, int> uncovered;
        for (Node* node : nodes) {
            if (merged.count(node) || !carries(node))
                continue;
            if (isOp(node, Layers))
                rewriteLayer(node, merged);
            else if (isOp(node, Activations))
                passThrough(node);
            else if (isOp(node, {"aten::add", "aten::add_"}) && sumOfTwo(node))
                splitSum(node);
            else if (isOp(node, Pools))
                normalise(node);
            else if (node->kind().is_aten() && !isOp(node, Moves))
                ++uncovered[node->kind().toQualString() + std::string(" in ")
                    + (inliner_.pathOf(node).empty() ? "the model's forward" : inliner_.pathOf(node))];
        }
        for (const auto& [what, count] : uncovered)
            coverage_.uncovered.push_back(
                what + " (" + std::to_string(count) + (count == 1 ? " node" : " nodes") + "): its plain gradient");
        torch::jit::EliminateDeadCode(graph_.block());
        graph_.lint();
        return coverage_;
    }

private:
    // The values the input's relevance can reach: those computed from the first input.
    // Tensors only (a size read from one is no relevance); through if-branches too.
    void markCarriers()
    {
        for (size_t i = 1; i < graph_.inputs().size(); ++i)
            carriers_.insert(graph_.inputs()[i]);
        for (size_t before = 0; before != carriers_.size();) {
            before = carriers_.size();
            forEachNode(graph_.block(), [&](Node* node) {
                bool reached = carries(node);
                for (const auto* block : node->blocks())
                    for (const Value* returned : block->return_node()->inputs())
                        reached = reached || carriers_.count(returned);
                if (reached)
                    for (Value* output : node->outputs())
                        if (holdsTensors(output->type()))
                            carriers_.insert(output);
            });
        }
    }
    bool carries(const Node* node) const
    {
        for (const Value* input : node->inputs())
            if (carriers_.count(input))
                return true;
        return false;
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
    Value* positive(Value* v) { return v ? op("aten::clamp_min", {v, 0.0}) : nullptr; }
    Value* negative(Value* v) { return v ? op("aten::clamp_max", {v, 0.0}) : nullptr; }

    // The layer's op again with another input, weight and bias (nullptr: none).
    Value* layer(Node* node, Value* x, Value* w, Value* b)
    {
        Node* copy = graph_.createClone(node, [](Value* v) { return v; });
        copy->replaceInput(0, x);
        copy->replaceInput(1, w);
        if (copy->inputs().size() > 2)
            copy->replaceInput(2, b ? b : none());
        graph_.insertNode(copy);
        return copy->output();
    }
    Value* sum(Value* a, Value* b) { return op("aten::add", {a, b}); }
    Value* difference(Value* a, Value* b) { return op("aten::sub", {a, b}); }
    Value* ratio(Value* t, Value* denominator) { return op("aten::div", {t, stopped(denominator)}); }

    RelevanceRule ruleFor(Node* node, const std::string& path, bool first)
    {
        const LayerKind kind = isOp(node, {"aten::linear"}) ? LayerKind::Dense : LayerKind::Convolution;
        RelevanceRule rule = compositeRule(settings_.composite, kind, first);
        for (const auto& o : overrides_)
            for (const auto& p : o.paths)
                if (path == p || startsWith(path, p + "."))
                    rule = o.rule;
        return rule;
    }

    Value* bound(const std::vector<double>& values, Value* x, int rank)
    {
        std::vector<int64_t> shape(static_cast<size_t>(std::max(2, rank)), 1);
        shape[1] = static_cast<int64_t>(values.size());
        const at::Tensor constant = at::tensor(values).to(at::kFloat).reshape(shape);
        return op("aten::expand_as", {op("aten::type_as", {graph_.insertConstant(constant), x}), x});
    }

    // The rule's t (relevance_graph.h); z: the layer's output with the weights the rule starts from.
    Value* ruleTerm(
        Node* node, Value* x, Value* w, Value* b, Value* z, const RelevanceRule& rule, const std::string& path)
    {
        constexpr double Stabiliser = 1e-6;
        switch (rule.kind) {
        case RuleKind::Epsilon:
        case RuleKind::Norm:
            return ratio(layer(node, times(x, x), w, nullptr),
                stabilised(z, rule.kind == RuleKind::Epsilon ? rule.epsilon : Stabiliser));
        case RuleKind::Gamma: {
            Value* wg = sum(w, op("aten::mul", {positive(w), rule.gamma}));
            Value* bg = b ? sum(b, op("aten::mul", {positive(b), rule.gamma})) : nullptr;
            return ratio(layer(node, times(x, x), wg, nullptr), stabilised(layer(node, x, wg, bg), Stabiliser));
        }
        case RuleKind::ZPlus:
        case RuleKind::AlphaBeta: {
            Value* xp = positive(x);
            Value* xn = negative(x);
            Value* wp = positive(w);
            Value* wn = negative(w);
            // α: x⁺ through W⁺ and x⁻ through W⁻ (bias⁺); β: the opposite signs (bias⁻).
            Value* za = sum(layer(node, xp, wp, positive(b)), layer(node, xn, wn, nullptr));
            Value* ta = ratio(sum(layer(node, times(x, xp), wp, nullptr), layer(node, times(x, xn), wn, nullptr)),
                stabilised(za, Stabiliser));
            if (rule.kind == RuleKind::ZPlus)
                return ta;
            Value* zb = sum(layer(node, xp, wn, negative(b)), layer(node, xn, wp, nullptr));
            Value* tb = ratio(sum(layer(node, times(x, xp), wn, nullptr), layer(node, times(x, xn), wp, nullptr)),
                stabilised(zb, Stabiliser));
            return difference(op("aten::mul", {ta, rule.alpha}), op("aten::mul", {tb, rule.beta}));
        }
        case RuleKind::Flat:
        case RuleKind::WSquare: {
            Value* modified = rule.kind == RuleKind::Flat ? op("aten::ones_like", {w}) : op("aten::mul", {w, w});
            Value* bias = rule.kind == RuleKind::WSquare && b ? op("aten::mul", {b, b}) : nullptr;
            Value* ones = op("aten::ones_like", {x});
            return ratio(layer(node, x, modified, nullptr), stabilised(layer(node, ones, modified, bias), Stabiliser));
        }
        case RuleKind::ZBox: {
            if (settings_.low.empty() || settings_.low.size() != settings_.high.size())
                throw Error("the zbox rule (at '" + path
                    + "') needs the input's lowest and highest values per channel: give the input setup's "
                      "normalisation (mean and std), or choose another rule for the first layer");
            const int rank = std::max(2, weightRank(node));
            Value* low = bound(settings_.low, x, rank);
            Value* high = bound(settings_.high, x, rank);
            Value* wp = positive(w);
            Value* wn = negative(w);
            Value* zbox = difference(difference(layer(node, x, w, b), layer(node, low, wp, positive(b))),
                layer(node, high, wn, negative(b)));
            Value* t
                = difference(difference(layer(node, times(x, x), w, nullptr), layer(node, times(x, low), wp, nullptr)),
                    layer(node, times(x, high), wn, nullptr));
            return ratio(t, stabilised(zbox, Stabiliser));
        }
        case RuleKind::Pass:
        case RuleKind::Gradient:
            break;
        }
        return nullptr;
    }

    // A convolution or linear layer, with the batch norm that follows it merged in.
    void rewriteLayer(Node* node, std::set<Node*>& merged)
    {
        const std::string path = inliner_.pathOf(node);
        const bool first = !firstSeen_;
        firstSeen_ = true;
        const RelevanceRule rule = ruleFor(node, path, first);
        std::string described
            = (path.empty() ? std::string("the model's forward") : path) + " " + node->kind().toUnqualString();
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
            b = concrete(node->input(2));
        }
        Value* output = node->output();
        Node* norm = nullptr;
        if (const auto eps = foldableNorm(node, &norm)) {
            // Zennit's SequentialMergeBatchNorm, on the graph, in its order of operations: w·s,
            // (b − mean)·s + β, s = γ / (var + ε)^0.5. The merged layer's output goes forward, as
            // in Zennit's canonised model (the model's own within float rounding).
            WithInsertPoint atNorm(norm);
            Value* gammaNorm = concrete(norm->input(1));
            Value* beta = concrete(norm->input(2));
            Value* scale = op("aten::pow", {op("aten::add", {concrete(norm->input(4)), *eps}), 0.5});
            scale = gammaNorm ? op("aten::div", {gammaNorm, scale}) : op("aten::reciprocal", {scale});
            std::vector<int64_t> shape(static_cast<size_t>(weightRank(node)), 1);
            shape[0] = -1;
            w = op("aten::mul", {w, op("aten::reshape", {scale, graph_.insertConstant(c10::IValue(shape))})});
            Value* mean = concrete(norm->input(3));
            Value* shifted = b ? difference(b, mean) : op("aten::neg", {mean});
            b = op("aten::mul", {shifted, scale});
            if (beta)
                b = sum(b, beta);
            Value* z = layer(node, x, w, b);
            Value* t = ruleTerm(node, x, w, b, z, rule, path);
            finish(norm->output(), t, norm, z);
            merged.insert(norm);
            described += std::string(" + ") + norm->kind().toUnqualString() + std::string(" ") + inliner_.pathOf(norm)
                + " merged";
            coverage_.layers.push_back(described + ": " + rule.toString());
            return;
        }
        WithInsertPoint after(node->next()); // z is the layer's own output
        Value* t = ruleTerm(node, x, w, b, output, rule, path);
        finish(output, t, t->node());
        coverage_.layers.push_back(described + ": " + rule.toString());
    }

    // An optional tensor as what it is in the loaded module: nullptr for None, else the tensor (a
    // scripted Conv2d's bias is typed Optional[Tensor] in the graph, whatever the module holds).
    Value* concrete(Value* value)
    {
        if (value->mustBeNone())
            return nullptr;
        if (!value->type()->cast<c10::OptionalType>())
            return value;
        const Node* read = value->node();
        if (read->kind() == c10::prim::GetAttr) {
            const auto owners = modulePaths(graph_);
            if (const auto owner = owners.find(read->input(0)); owner != owners.end())
                if (const auto holder = moduleAt(owner->second)) {
                    if (holder->attr(read->s(c10::attr::name)).isNone())
                        return nullptr;
                    return graph_.insertUncheckedCast(value, c10::TensorType::get());
                }
        }
        throw Error("a layer's optional " + value->debugName()
            + " cannot be resolved to a tensor or None: TorchScope cannot apply an LRP rule to it");
    }

    // The module an op of a batch norm came from, when it is one (its attributes are what a graph
    // computes from self.training and self.eps).
    std::optional<torch::jit::Module> moduleAt(const std::string& path) const
    {
        try {
            torch::jit::Module holder = module_;
            for (const auto& part : split(path, '.'))
                if (!part.empty())
                    holder = holder.attr(part).toModule();
            return holder;
        } catch (const std::exception&) {
            return std::nullopt;
        }
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
            const auto holder = moduleAt(inliner_.pathOf(found));
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
    void finish(Value* output, Value* t, Node* after, Value* forward = nullptr)
    {
        WithInsertPoint insert(after->next());
        Value* out = combined(forward ? forward : output, t);
        output->replaceAllUsesAfterNodeWith(out->node(), out);
        carriers_.insert(out); // the ops after it are rewritten too
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

    // The identity rule: R passes on unchanged.
    void passThrough(Node* node)
    {
        node = outOfPlace(node);
        finish(node->output(), node->input(0), node); // t = x: the gradient passes as it is
    }

    bool sumOfTwo(const Node* node) const
    {
        if (node->inputs().size() < 2 || !isTensor(node->input(0)) || !isTensor(node->input(1)))
            return false;
        if (node->inputs().size() > 2) {
            const auto alpha = torch::jit::toIValue(node->input(2));
            if (!alpha || !((alpha->isInt() && alpha->toInt() == 1) || (alpha->isDouble() && alpha->toDouble() == 1.0)))
                return false;
        }
        return carriers_.count(node->input(0)) && carriers_.count(node->input(1));
    }

    // A residual sum: each term keeps its share (norm), so the two branches do not both get all.
    void splitSum(Node* node)
    {
        node = outOfPlace(node);
        Value* a = node->input(0);
        Value* b = node->input(1);
        WithInsertPoint after(node->next());
        Value* t = ratio(sum(times(a, a), times(b, b)), stabilised(node->output(), 1e-6));
        finish(node->output(), t, t->node());
        coverage_.layers.push_back(
            (inliner_.pathOf(node).empty() ? std::string("the model's forward") : inliner_.pathOf(node))
            + " sum: norm");
    }

    // Average pooling and means: linear, norm (Zennit's AvgPool rule).
    void normalise(Node* node)
    {
        Value* x = node->input(0);
        WithInsertPoint after(node->next());
        Node* copy = graph_.createClone(node, [](Value* v) { return v; });
        copy->replaceInput(0, times(x, x));
        graph_.insertNode(copy);
        Value* t = ratio(copy->output(), stabilised(node->output(), 1e-6));
        finish(node->output(), t, t->node());
        coverage_.layers.push_back(
            (inliner_.pathOf(node).empty() ? std::string("the model's forward") : inliner_.pathOf(node)) + " "
            + node->kind().toUnqualString() + ": norm");
    }

    Graph& graph_;
    const torch::jit::Module& module_;
    const RelevanceSettings& settings_;
    const std::vector<ResolvedRuleOverride>& overrides_;
    Inliner inliner_;
    std::unordered_set<const Value*> carriers_;
    RelevanceCoverage coverage_;
    bool firstSeen_ = false;
};

} // namespace

RelevanceCoverage rewriteForRelevance(Graph& graph, const torch::jit::Module& module, const RelevanceSettings& settings,
    const std::vector<ResolvedRuleOverride>& overrides)
{
    return Rewriter(graph, module, settings, overrides).run();
}

} // namespace torchscope
