#include "relevance/relevance_ops.h"

#include "relevance/relevance_rules.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace torchscope::relevance {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::Variable;
using torch::autograd::variable_list;

// Zennit's stabilize, z + ε·sign(z) with sign(0) = 1, as z ± ε by z ≥ 0 (the same values: −0 counts
// as 0), in three passes over z where the sign, the comparison and the sum took six.
at::Tensor stabilised(const at::Tensor& z, double epsilon)
{
    return at::where(z.ge(0), at::scalar_tensor(epsilon, z.options()), at::scalar_tensor(-epsilon, z.options()))
        .add_(z);
}

// r / stab(z, ε), written over the stabilised values.
at::Tensor divided(const at::Tensor& r, const at::Tensor& z, double epsilon)
{
    at::Tensor stab = stabilised(z, epsilon);
    return at::div_out(stab, r, stab);
}

at::Tensor positivePart(const at::Tensor& t)
{
    return t.defined() ? t.clamp_min(0.0) : t;
}
at::Tensor negativePart(const at::Tensor& t)
{
    return t.defined() ? t.clamp_max(0.0) : t;
}

// The layer: a convolution (transposed or not) with its geometry, or a linear layer (no stride).
struct Layer {
    std::vector<int64_t> stride, padding, dilation, outputPadding;
    std::string paddingMode; // "same" or "valid" where a convolution names its padding
    bool transposedConvolution = false;
    int64_t groups = 1;

    bool linear() const { return stride.empty(); }

    // f(x; w, b). A convolution's unbatched input ([C, H, W] for a 2-D one) as a batch of one.
    at::Tensor forward(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) const
    {
        if (linear())
            return at::linear(x, w, b);
        if (x.dim() == w.dim() - 1)
            return forward(x.unsqueeze(0), w, b).squeeze(0);
        return at::convolution(
            x, w, b, stride, paddingFor(w), dilation, transposedConvolution, outputPaddingOf(), groups);
    }

    // Wᵀ s: the gradient of f(x; w) with respect to x, for the output's gradient s.
    at::Tensor transposed(const at::Tensor& s, const at::Tensor& x, const at::Tensor& w) const
    {
        if (linear())
            return s.matmul(w);
        if (x.dim() == w.dim() - 1)
            return transposed(s.unsqueeze(0), x.unsqueeze(0), w).squeeze(0);
        return std::get<0>(at::convolution_backward(s, x, w, std::nullopt, stride, paddingFor(w), dilation,
            transposedConvolution, outputPaddingOf(), groups, {true, false, false}));
    }

private:
    std::vector<int64_t> outputPaddingOf() const
    {
        return outputPadding.empty() ? std::vector<int64_t>(stride.size(), 0) : outputPadding;
    }

    // padding='same' as the numbers it stands for (half the dilated kernel each side, as
    // F.conv2d pads); 'valid' none.
    std::vector<int64_t> paddingFor(const at::Tensor& w) const
    {
        if (paddingMode.empty())
            return padding;
        std::vector<int64_t> out(static_cast<size_t>(w.dim() - 2), 0);
        if (paddingMode == "valid")
            return out;
        TORCH_CHECK(paddingMode == "same", "LRP: a convolution's padding '", paddingMode,
            "' is neither a size, 'same' nor 'valid'");
        for (size_t i = 0; i < out.size(); ++i) {
            const int64_t d = dilation.size() == 1 ? dilation[0] : dilation.at(i);
            const int64_t total = d * (w.size(static_cast<int64_t>(i) + 2) - 1);
            TORCH_CHECK(total % 2 == 0, "LRP: a convolution with padding='same' pads unevenly here (kernel ", w.sizes(),
                ", dilation ", d,
                "), which the relevance rules do not take; pad the input explicitly (F.pad) in the model");
            out[i] = total / 2;
        }
        return out;
    }
};

// An input split by sign for the rules that treat x⁺ and x⁻ apart. Where x is nowhere negative
// (known from the graph, after a ReLU, or found here) x⁻'s terms are zero and are skipped.
class Signs {
public:
    Signs(const at::Tensor& x, bool nonNegative)
        : signed_(!nonNegative && x.lt(0).any().item<bool>())
        , positive_(signed_ ? x.clamp_min(0.0) : x)
        , negative_(signed_ ? x.clamp_max(0.0) : at::Tensor())
    { }

    // f(x⁺; w⁺, b) + f(x⁻; w⁻): the layer's output with a weight per sign.
    template <typename Layer>
    at::Tensor layer(
        const Layer& f, const at::Tensor& forPositive, const at::Tensor& forNegative, const at::Tensor& bias) const
    {
        at::Tensor out = f(positive_, forPositive, bias);
        if (signed_)
            out.add_(f(negative_, forNegative, at::Tensor()));
        return out;
    }

    // x⁺ ⊙ W⁺ᵀ s + x⁻ ⊙ W⁻ᵀ s.
    template <typename Transposed>
    at::Tensor relevance(
        const at::Tensor& s, const Transposed& t, const at::Tensor& forPositive, const at::Tensor& forNegative) const
    {
        at::Tensor out = t(s, forPositive).mul_(positive_);
        if (signed_)
            out.add_(t(s, forNegative).mul_(negative_));
        return out;
    }

    bool isSigned() const { return signed_; }

private:
    bool signed_;
    at::Tensor positive_, negative_;
};

// Tensors made from a layer's parameters (W⁺, W⁻, γ's weights, a batch norm merged in), kept while
// the parameters live and are unchanged (their version counter: the sanity check's randomisation
// writes in place), as a model runs many times with the same weights. Process-wide, bounded.
class DerivedWeights {
public:
    static DerivedWeights& instance()
    {
        static DerivedWeights cache;
        return cache;
    }

    at::Tensor get(
        const std::string& name, const std::vector<at::Tensor>& sources, const std::function<at::Tensor()>& make)
    {
        for (const auto& source : sources)
            if (source.defined() && source.is_inference())
                return make(); // no version counter to tell a change by
        std::string key = name;
        for (const auto& source : sources)
            key += "|"
                + std::to_string(
                    reinterpret_cast<uintptr_t>(source.defined() ? source.unsafeGetTensorImpl() : nullptr));
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            if (const auto found = entries_.find(key); found != entries_.end() && found->second.matches(sources))
                return found->second.value;
        }
        Entry entry; // made unlocked: making it may ask for another (a merged weight for its scale)
        for (const auto& source : sources) {
            entry.sources.push_back(
                source.defined() ? std::optional<Weak>(Weak(source.getIntrusivePtr())) : std::nullopt);
            entry.versions.push_back(source.defined() ? source._version() : 0);
        }
        entry.value = make();
        const std::lock_guard<std::mutex> lock(mutex_);
        if (entries_.size() >= Capacity)
            prune();
        entries_[key] = entry;
        return entry.value;
    }

private:
    using Weak = c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>;
    static constexpr size_t Capacity = 4096;

    struct Entry {
        std::vector<std::optional<Weak>> sources; // none for an undefined bias
        std::vector<uint32_t> versions;
        at::Tensor value;

        bool matches(const std::vector<at::Tensor>& now) const
        {
            for (size_t i = 0; i < now.size(); ++i) {
                if (now[i].defined() != sources[i].has_value())
                    return false;
                if (!now[i].defined())
                    continue;
                if (sources[i]->lock().get() != now[i].unsafeGetTensorImpl() || versions[i] != now[i]._version())
                    return false;
            }
            return true;
        }
        // A parameter it was made from is gone (an undefined bias has no pointer to lose).
        bool expired() const
        {
            for (const auto& source : sources)
                if (source && source->expired())
                    return true;
            return false;
        }
    };

    void prune()
    {
        for (auto it = entries_.begin(); it != entries_.end();)
            it = it->second.expired() ? entries_.erase(it) : std::next(it);
        if (entries_.size() >= Capacity)
            entries_.clear();
    }

    std::mutex mutex_;
    std::unordered_map<std::string, Entry> entries_;
};

// A layer's weight and bias, with a batch norm after it merged in (Zennit's
// SequentialMergeBatchNorm, in its order of operations: w·s, (b − mean)·s + β, s = γ / (var + ε)^0.5),
// and what the rules make of them, each made once for the parameters.
class LayerParameters {
public:
    // `norm`: the batch norm's weight, bias, running mean and variance (undefined: none), and ε.
    LayerParameters(at::Tensor w, at::Tensor b, std::vector<at::Tensor> norm, double eps)
        : sources_{std::move(w), std::move(b)}
        , merged_(norm.size() == 4 && norm[2].defined() && norm[3].defined())
        , eps_(eps)
    {
        if (merged_)
            sources_.insert(sources_.end(), norm.begin(), norm.end());
        tag_ = merged_ ? "merged:" + std::to_string(eps) + "/" : "/";
    }

    at::Tensor weight() const
    {
        if (!merged_)
            return sources_[0];
        return derived("w", [&] {
            const at::Tensor& w = sources_[0];
            std::vector<int64_t> shape(static_cast<size_t>(w.dim()), 1);
            shape[0] = -1;
            return w * scale().reshape(shape);
        });
    }
    at::Tensor bias() const
    {
        if (!merged_)
            return sources_[1];
        return derived("b", [&] {
            const at::Tensor& b = sources_[1];
            const at::Tensor& mean = sources_[4];
            at::Tensor out = (b.defined() ? b - mean : at::neg(mean)) * scale();
            return sources_[3].defined() ? out + sources_[3] : out;
        });
    }

    // `make` of the (merged) weight and bias, once for these parameters.
    at::Tensor derived(const std::string& name, const std::function<at::Tensor()>& make) const
    {
        return DerivedWeights::instance().get(tag_ + name, sources_, make);
    }

private:
    at::Tensor scale() const
    {
        return derived("scale", [&] {
            const at::Tensor root = at::pow(sources_[5] + eps_, 0.5);
            return sources_[2].defined() ? sources_[2] / root : at::reciprocal(root);
        });
    }

    std::vector<at::Tensor> sources_; // w, b[, norm weight, norm bias, mean, variance]
    bool merged_;
    double eps_;
    std::string tag_;
};

struct Rule {
    RuleKind kind = RuleKind::Epsilon;
    double epsilon = 0.0, gamma = 0.0, alpha = 0.0, beta = 0.0;
};

// The relevance of x for the relevance R at the layer's output z: the gradient the graph
// expressions of relevance_graph.cpp give, computed directly.
at::Tensor layerRelevance(const Layer& layer, const Rule& rule, const at::Tensor& r, const at::Tensor& x,
    bool nonNegative, const LayerParameters& parameters, const at::Tensor& z, const at::Tensor& low,
    const at::Tensor& high)
{
    constexpr double Stabiliser = 1e-6;
    const at::Tensor w = parameters.weight();
    const at::Tensor b = parameters.bias();
    const auto f = [&](const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias) {
        return layer.forward(input, weight, bias);
    };
    const auto t = [&](const at::Tensor& s, const at::Tensor& weight) { return layer.transposed(s, x, weight); };
    const auto made = [&](const std::string& name, const std::function<at::Tensor()>& make) {
        return parameters.derived(name, make);
    };
    const auto wp = [&] { return made("w+", [&] { return w.clamp_min(0.0); }); };
    const auto wn = [&] { return made("w-", [&] { return w.clamp_max(0.0); }); };
    const auto bp = [&] { return made("b+", [&] { return positivePart(b); }); };
    const auto bn = [&] { return made("b-", [&] { return negativePart(b); }); };
    switch (rule.kind) {
    case RuleKind::Epsilon:
    case RuleKind::Norm: {
        const at::Tensor s = divided(r, z, rule.kind == RuleKind::Epsilon ? rule.epsilon : Stabiliser);
        return t(s, w).mul_(x);
    }
    case RuleKind::Gamma: {
        // Zennit ≥ 0.5's generalised γ: where z > 0, x⁺ through W + γW⁺ (bias b + γb⁺) and x⁻
        // through W + γW⁻; where z < 0, x⁺ through W + γW⁻ (bias b + γb⁻) and x⁻ through W + γW⁺.
        const Signs signs(x, nonNegative);
        const std::string g = std::to_string(rule.gamma);
        const at::Tensor up = made("up:" + g, [&] { return w + wp() * rule.gamma; });
        const at::Tensor down = made("down:" + g, [&] { return w + wn() * rule.gamma; });
        const at::Tensor bUp = made("bup:" + g, [&] { return b.defined() ? b + bp() * rule.gamma : b; });
        const at::Tensor bDown = made("bdown:" + g, [&] { return b.defined() ? b + bn() * rule.gamma : b; });
        const auto side = [&](const at::Tensor& forPositive, const at::Tensor& forNegative, const at::Tensor& bias,
                              const at::Tensor& mask) {
            return signs.relevance(divided(r, signs.layer(f, forPositive, forNegative, bias), Stabiliser).mul_(mask), t,
                forPositive, forNegative);
        };
        return side(up, down, bUp, z.gt(0).type_as(z)).add_(side(down, up, bDown, z.lt(0).type_as(z)));
    }
    case RuleKind::ZPlus:
    case RuleKind::AlphaBeta: {
        // α: x⁺ through W⁺ and x⁻ through W⁻ (bias⁺); β: the opposite signs (bias⁻). W⁻ only where
        // x has a negative part or β needs it.
        const Signs signs(x, nonNegative);
        const auto part = [&](const at::Tensor& rIn, const at::Tensor& forPositive, const at::Tensor& forNegative,
                              const at::Tensor& bias) {
            return signs.relevance(
                divided(rIn, signs.layer(f, forPositive, forNegative, bias), Stabiliser), t, forPositive, forNegative);
        };
        const at::Tensor negativeWeights = signs.isSigned() || rule.kind == RuleKind::AlphaBeta ? wn() : at::Tensor();
        if (rule.kind == RuleKind::ZPlus)
            return part(r, wp(), negativeWeights, bp());
        return part(r * rule.alpha, wp(), negativeWeights, bp()).sub_(part(r * rule.beta, negativeWeights, wp(), bn()));
    }
    case RuleKind::Flat:
    case RuleKind::WSquare: {
        const bool flat = rule.kind == RuleKind::Flat;
        const at::Tensor modified = made(flat ? "ones" : "w2", [&] { return flat ? at::ones_like(w) : w * w; });
        const at::Tensor bias = made(flat ? "none" : "b2", [&] { return !flat && b.defined() ? b * b : at::Tensor(); });
        return t(divided(r, f(at::ones_like(x), modified, bias), Stabiliser), modified);
    }
    case RuleKind::ZBox: {
        // The bounds per channel [C] on x's channel axis.
        std::vector<int64_t> shape(static_cast<size_t>(x.dim()), 1);
        shape.at(std::min<size_t>(1, shape.size() - 1)) = -1;
        const at::Tensor lower = low.reshape(shape), upper = high.reshape(shape);
        const at::Tensor lowest = lower.expand_as(x), highest = upper.expand_as(x);
        const at::Tensor zbox = z - f(lowest, wp(), bp()) - f(highest, wn(), bn());
        const at::Tensor s = divided(r, zbox, Stabiliser);
        return t(s, w).mul_(x).sub_(t(s, wp()).mul_(lower)).sub_(t(s, wn()).mul_(upper));
    }
    case RuleKind::Pass:
    case RuleKind::Gradient:
        break;
    }
    TORCH_CHECK(false, "lrp_layer: rule ", static_cast<int>(rule.kind), " has no layer form");
}

at::Tensor orUndefined(const std::optional<at::Tensor>& t)
{
    return t.value_or(at::Tensor());
}

class LrpLayer : public torch::autograd::Function<LrpLayer> {
public:
    static variable_list forward(AutogradContext* ctx, const Variable& x, const Variable& w,
        const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& normWeight,
        const std::optional<at::Tensor>& normBias, const std::optional<at::Tensor>& normMean,
        const std::optional<at::Tensor>& normVariance, double normEps, std::vector<int64_t> stride,
        std::vector<int64_t> padding, std::string paddingMode, std::vector<int64_t> dilation,
        std::vector<int64_t> outputPadding, bool transposed, int64_t groups, int64_t rule,
        std::vector<double> parameters, const std::optional<at::Tensor>& low, const std::optional<at::Tensor>& high,
        bool nonNegative)
    {
        TORCH_CHECK(
            parameters.size() == 4, "lrp_layer: 4 parameters (epsilon, gamma, alpha, beta), got ", parameters.size());
        TORCH_CHECK(rule >= 0 && rule <= static_cast<int64_t>(RuleKind::Gradient), "lrp_layer: no rule ", rule);
        const at::AutoDispatchBelowADInplaceOrView below;
        const std::vector<at::Tensor> norm{
            orUndefined(normWeight), orUndefined(normBias), orUndefined(normMean), orUndefined(normVariance)};
        const LayerParameters weights(w, orUndefined(bias), norm, normEps);
        const Layer layer{stride, padding, dilation, outputPadding, paddingMode, transposed, groups};
        at::Tensor z = layer.forward(x, weights.weight(), weights.bias());
        // The parameters as they are (not through save_for_backward, whose copies would not be the
        // tensors DerivedWeights knows).
        ctx->saved_data["weight"] = w;
        ctx->saved_data["bias"] = orUndefined(bias);
        ctx->saved_data["norm"] = c10::List<at::Tensor>(norm);
        ctx->saved_data["norm_eps"] = normEps;
        ctx->saved_data["stride"] = stride;
        ctx->saved_data["padding"] = padding;
        ctx->saved_data["dilation"] = dilation;
        ctx->saved_data["output_padding"] = outputPadding;
        ctx->saved_data["padding_mode"] = paddingMode;
        ctx->saved_data["transposed"] = transposed;
        ctx->saved_data["groups"] = groups;
        ctx->saved_data["rule"] = rule;
        ctx->saved_data["parameters"] = parameters;
        ctx->saved_data["nonnegative"] = nonNegative;
        ctx->save_for_backward({x, z, orUndefined(low), orUndefined(high)});
        return {z};
    }

    static variable_list backward(AutogradContext* ctx, const variable_list& gradOutput)
    {
        variable_list out(20);
        if (!gradOutput[0].defined())
            return out;
        const auto saved = ctx->get_saved_variables();
        auto& data = ctx->saved_data;
        const Layer layer{data["stride"].toIntVector(), data["padding"].toIntVector(), data["dilation"].toIntVector(),
            data["output_padding"].toIntVector(), data["padding_mode"].toStringRef(), data["transposed"].toBool(),
            data["groups"].toInt()};
        const auto values = data["parameters"].toDoubleVector();
        const Rule rule{static_cast<RuleKind>(data["rule"].toInt()), values[0], values[1], values[2], values[3]};
        const LayerParameters weights(data["weight"].toTensor(), data["bias"].toTensor(), data["norm"].toTensorVector(),
            data["norm_eps"].toDouble());
        out[0] = layerRelevance(
            layer, rule, gradOutput[0], saved[0], data["nonnegative"].toBool(), weights, saved[1], saved[2], saved[3]);
        return out;
    }
};

class LrpPass : public torch::autograd::Function<LrpPass> {
public:
    static variable_list forward(AutogradContext*, const Variable& output, const Variable&) { return {output}; }

    static variable_list backward(AutogradContext*, const variable_list& gradOutput)
    {
        return {Variable(), gradOutput[0]};
    }
};

class LrpSum : public torch::autograd::Function<LrpSum> {
public:
    static variable_list forward(AutogradContext* ctx, const Variable& a, const Variable& b, double stabiliser)
    {
        const at::AutoDispatchBelowADInplaceOrView below;
        at::Tensor sum = a + b;
        ctx->saved_data["stabiliser"] = stabiliser;
        ctx->save_for_backward({a, b, sum});
        return {sum};
    }

    static variable_list backward(AutogradContext* ctx, const variable_list& gradOutput)
    {
        if (!gradOutput[0].defined())
            return {Variable(), Variable(), Variable()};
        const auto saved = ctx->get_saved_variables();
        const at::Tensor s = gradOutput[0] / stabilised(saved[2], ctx->saved_data["stabiliser"].toDouble());
        return {
            at::sum_to(s * saved[0], saved[0].sym_sizes()), at::sum_to(s * saved[1], saved[1].sym_sizes()), Variable()};
    }
};

at::Tensor lrpLayer(const at::Tensor& x, const at::Tensor& w, const std::optional<at::Tensor>& bias,
    const std::optional<at::Tensor>& normWeight, const std::optional<at::Tensor>& normBias,
    const std::optional<at::Tensor>& normMean, const std::optional<at::Tensor>& normVariance, double normEps,
    c10::IntArrayRef stride, c10::IntArrayRef padding, c10::string_view paddingMode, c10::IntArrayRef dilation,
    c10::IntArrayRef outputPadding, bool transposed, int64_t groups, int64_t rule, c10::ArrayRef<double> parameters,
    const std::optional<at::Tensor>& low, const std::optional<at::Tensor>& high, bool nonNegative)
{
    return LrpLayer::apply(x, w, bias, normWeight, normBias, normMean, normVariance, normEps, stride.vec(),
        padding.vec(), std::string(paddingMode), dilation.vec(), outputPadding.vec(), transposed, groups, rule,
        parameters.vec(), low, high, nonNegative)[0];
}

at::Tensor lrpPass(const at::Tensor& output, const at::Tensor& x)
{
    return LrpPass::apply(output, x)[0];
}

at::Tensor lrpSum(const at::Tensor& a, const at::Tensor& b, double stabiliser)
{
    return LrpSum::apply(a, b, stabiliser)[0];
}

} // namespace

void registerRelevanceOps()
{
    static std::once_flag once;
    // Registrations live as long as their Library: for the whole process, held here (so that
    // LeakSanitizer sees it reachable) and never destroyed (the dispatcher may go first at exit).
    static torch::Library* library = nullptr;
    std::call_once(once, [] {
        library = new torch::Library(torch::Library::FRAGMENT, "torchscope", std::nullopt, __FILE__, __LINE__);
        library->def("lrp_layer(Tensor x, Tensor weight, Tensor? bias, Tensor? norm_weight, Tensor? norm_bias, "
                     "Tensor? norm_mean, Tensor? norm_var, float norm_eps, int[] stride, int[] padding, "
                     "str padding_mode, int[] dilation, int[] output_padding, bool transposed, int groups, int rule, "
                     "float[] parameters, Tensor? low, Tensor? high, bool nonnegative) -> Tensor",
            TORCH_FN(lrpLayer));
        library->def("lrp_pass(Tensor output, Tensor x) -> Tensor", TORCH_FN(lrpPass));
        library->def("lrp_sum(Tensor a, Tensor b, float stabiliser) -> Tensor", TORCH_FN(lrpSum));
    });
}

} // namespace torchscope::relevance
