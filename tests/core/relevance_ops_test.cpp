// LRP's rule operators (relevance/relevance_ops.h) against the "modified gradient" form written
// with ATen's own autograd: out = stop_grad(z) + (t − stop_grad(t)), whose input gradient is the
// rule's relevance (Zennit's hooks compute the same; tests/cli/test_relevance.py holds the whole
// graph to Zennit). In float64, on signed and non-negative inputs of 3 channels, height ≠ width
// and batch 2: every rule of a convolution, a transposed convolution, padding='same', a linear
// layer on tokens, a merged batch norm, the cache of derived weights after an in-place change, the
// norm rule of a (broadcast) sum and the identity rule.
#include "relevance/relevance_ops.h"
#include "relevance/relevance_rules.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/autograd.h>

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace torchscope::test {
namespace {

using Optional = std::optional<at::Tensor>;

struct Geometry {
    std::vector<int64_t> stride{}, padding{}, dilation{}, outputPadding{};
    std::string mode;
    bool transposed = false;
    int64_t groups = 1;
    bool linear() const { return stride.empty(); }
};

struct Norm {
    at::Tensor weight, bias, mean, variance;
    double eps = 1e-5;
};

at::Tensor layerOp(const at::Tensor& x, const at::Tensor& w, const Optional& b, const std::optional<Norm>& norm,
    const Geometry& g, const RelevanceRule& rule, const Optional& low, const Optional& high, bool nonNegative)
{
    relevance::registerRelevanceOps();
    static const auto op = c10::Dispatcher::singleton()
                               .findSchemaOrThrow(relevance::LayerOp, "")
                               .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const Optional&, const Optional&,
                                   const Optional&, const Optional&, const Optional&, double, c10::IntArrayRef,
                                   c10::IntArrayRef, c10::string_view, c10::IntArrayRef, c10::IntArrayRef, bool,
                                   int64_t, int64_t, c10::ArrayRef<double>, const Optional&, const Optional&, bool)>();
    const std::vector<double> parameters{rule.epsilon, rule.gamma, rule.alpha, rule.beta};
    return op.call(x, w, b, norm ? Optional(norm->weight) : std::nullopt, norm ? Optional(norm->bias) : std::nullopt,
        norm ? Optional(norm->mean) : std::nullopt, norm ? Optional(norm->variance) : std::nullopt,
        norm ? norm->eps : 0.0, g.stride, g.padding, g.mode, g.dilation, g.outputPadding, g.transposed, g.groups,
        static_cast<int64_t>(rule.kind), parameters, low, high, nonNegative);
}

// The oracle's layer: ATen's own ops (padding='same' as F.conv2d takes it).
at::Tensor f(const Geometry& g, const at::Tensor& x, const at::Tensor& w, const Optional& b)
{
    if (g.linear())
        return at::linear(x, w, b);
    if (g.mode == "same")
        return at::conv2d(x, w, b, g.stride, "same", g.dilation, g.groups);
    if (g.transposed)
        return at::conv_transpose2d(x, w, b, g.stride, g.padding, g.outputPadding, g.groups, g.dilation);
    return at::conv2d(x, w, b, g.stride, g.padding, g.dilation, g.groups);
}

// Zennit's stabilize, as it writes it.
at::Tensor stab(const at::Tensor& z, double epsilon)
{
    return z + epsilon * (z.sign() + z.eq(0).to(z.dtype()));
}

// The rule's t, whose gradient with respect to x is the relevance (relevance_graph.h).
at::Tensor ruleTerm(const Geometry& g, const RelevanceRule& rule, const at::Tensor& x, const at::Tensor& w,
    const Optional& b, const at::Tensor& z, const Optional& low, const Optional& high)
{
    const auto pos = [](const at::Tensor& t) { return t.clamp_min(0); };
    const auto neg = [](const at::Tensor& t) { return t.clamp_max(0); };
    const auto optionally = [&](const Optional& t, auto fn) { return t ? Optional(fn(*t)) : std::nullopt; };
    const at::Tensor xp = pos(x).detach(), xn = neg(x).detach();
    switch (rule.kind) {
    case RuleKind::Epsilon:
        return f(g, x * x.detach(), w, std::nullopt) / stab(z, rule.epsilon).detach();
    case RuleKind::ZPlus:
    case RuleKind::AlphaBeta: {
        const auto part = [&](const at::Tensor& forPositive, const at::Tensor& forNegative, const Optional& bias) {
            const at::Tensor denominator = f(g, xp, forPositive, bias) + f(g, xn, forNegative, std::nullopt);
            return (f(g, x * xp, forPositive, std::nullopt) + f(g, x * xn, forNegative, std::nullopt))
                / stab(denominator, 1e-6).detach();
        };
        const at::Tensor alpha = part(pos(w), neg(w), optionally(b, pos));
        if (rule.kind == RuleKind::ZPlus)
            return alpha;
        return rule.alpha * alpha - rule.beta * part(neg(w), pos(w), optionally(b, neg));
    }
    case RuleKind::Gamma: {
        const at::Tensor up = w + rule.gamma * pos(w), down = w + rule.gamma * neg(w);
        const Optional bUp = optionally(b, [&](const at::Tensor& t) { return t + rule.gamma * pos(t); });
        const Optional bDown = optionally(b, [&](const at::Tensor& t) { return t + rule.gamma * neg(t); });
        const auto side = [&](const at::Tensor& forPositive, const at::Tensor& forNegative, const Optional& bias,
                              const at::Tensor& mask) {
            const at::Tensor denominator = f(g, xp, forPositive, bias) + f(g, xn, forNegative, std::nullopt);
            return (f(g, x * xp, forPositive, std::nullopt) + f(g, x * xn, forNegative, std::nullopt)) * mask
                / stab(denominator, 1e-6).detach();
        };
        return side(up, down, bUp, z.gt(0).to(z.dtype())) + side(down, up, bDown, z.lt(0).to(z.dtype()));
    }
    case RuleKind::Flat:
        return f(g, x, at::ones_like(w), std::nullopt)
            / stab(f(g, at::ones_like(x), at::ones_like(w), std::nullopt), 1e-6).detach();
    case RuleKind::WSquare:
        return f(g, x, w * w, std::nullopt)
            / stab(f(g, at::ones_like(x), w * w, optionally(b, [](const at::Tensor& t) { return t * t; })), 1e-6)
                  .detach();
    case RuleKind::ZBox: {
        const at::Tensor l = low->reshape({1, -1, 1, 1}).expand_as(x), h = high->reshape({1, -1, 1, 1}).expand_as(x);
        const at::Tensor zbox
            = f(g, x, w, b) - f(g, l, pos(w), optionally(b, pos)) - f(g, h, neg(w), optionally(b, neg));
        return (f(g, x * x.detach(), w, std::nullopt) - f(g, x * l, pos(w), std::nullopt)
                   - f(g, x * h, neg(w), std::nullopt))
            / stab(zbox, 1e-6).detach();
    }
    default:
        ADD_FAILURE() << "no oracle for rule " << rule.toString();
        return z;
    }
}

// The input's relevance for the output relevance r, and the forward value, from the op.
std::pair<at::Tensor, at::Tensor> throughOp(const at::Tensor& input, const at::Tensor& w, const Optional& b,
    const std::optional<Norm>& norm, const Geometry& g, const RelevanceRule& rule, const at::Tensor& r,
    const Optional& low = std::nullopt, const Optional& high = std::nullopt, bool nonNegative = false)
{
    const at::Tensor x = input.detach().clone().requires_grad_(true);
    const at::Tensor out = layerOp(x, w, b, norm, g, rule, low, high, nonNegative);
    const at::Tensor relevance = torch::autograd::grad({out}, {x}, {r})[0];
    return {relevance, out.detach()};
}

std::pair<at::Tensor, at::Tensor> throughOracle(const at::Tensor& input, const at::Tensor& w, const Optional& b,
    const Geometry& g, const RelevanceRule& rule, const at::Tensor& r, const Optional& low = std::nullopt,
    const Optional& high = std::nullopt)
{
    const at::Tensor x = input.detach().clone().requires_grad_(true);
    const at::Tensor z = f(g, x, w, b);
    const at::Tensor t = ruleTerm(g, rule, x, w, b, z.detach(), low, high);
    const at::Tensor out = z.detach() + (t - t.detach());
    return {torch::autograd::grad({out}, {x}, {r})[0], z.detach()};
}

// Equal within float64 rounding, relative to the largest value; fails on NaN or infinity.
void expectClose(const at::Tensor& actual, const at::Tensor& expected, const std::string& what)
{
    ASSERT_EQ(actual.sizes(), expected.sizes()) << what;
    ASSERT_TRUE(at::isfinite(actual).all().item<bool>()) << what << ": not finite";
    ASSERT_TRUE(at::isfinite(expected).all().item<bool>()) << what << ": the oracle is not finite";
    const double scale = expected.abs().max().item<double>();
    ASSERT_GT(scale, 0.0) << what;
    const double error = (actual - expected).abs().max().item<double>() / scale;
    EXPECT_LT(error, 1e-10) << what << ": relative error " << error;
}

struct Data {
    at::Tensor x, w, b, r;
};

Data convolution(int64_t seed)
{
    at::manual_seed(seed);
    const auto d = at::TensorOptions().dtype(at::kDouble);
    Data data;
    data.x = at::randn({2, 3, 7, 10}, d);
    data.w = at::randn({5, 3, 3, 3}, d);
    data.b = at::randn({5}, d) * 0.1;
    return data;
}

const std::vector<std::string> LayerRules{
    "epsilon:0.25", "gamma:0.25", "zplus", "alphabeta:2:1", "flat", "wsquare", "epsilon", "norm"};

RelevanceRule asOracle(RelevanceRule rule)
{
    if (rule.kind == RuleKind::Norm) { // norm on a layer: ε with the stabiliser 1e-6
        rule.kind = RuleKind::Epsilon;
        rule.epsilon = 1e-6;
    }
    return rule;
}

TEST(RelevanceOps, EveryRuleOfAStridedConvolutionOnSignedInput)
{
    const Data data = convolution(1);
    const Geometry g{{2, 1}, {1, 1}, {1, 1}};
    for (const auto& name : LayerRules) {
        const RelevanceRule rule = RelevanceRule::parse(name);
        const at::Tensor z = f(g, data.x, data.w, data.b);
        const at::Tensor r = at::randn_like(z);
        const auto [relevance, out] = throughOp(data.x, data.w, data.b, std::nullopt, g, rule, r);
        const auto [expected, zExpected] = throughOracle(data.x, data.w, data.b, g, asOracle(rule), r);
        expectClose(out, zExpected, name + " forward");
        expectClose(relevance, expected, name);
    }
}

TEST(RelevanceOps, NonNegativeInputTakesTheShortPathWithTheSameRelevance)
{
    const Data data = convolution(2);
    const at::Tensor x = data.x.relu();
    const Geometry g{{1, 1}, {1, 1}, {1, 1}};
    for (const auto& name : {"zplus", "alphabeta:2:1", "gamma:0.25"}) {
        const RelevanceRule rule = RelevanceRule::parse(name);
        const at::Tensor r = at::randn_like(f(g, x, data.w, data.b));
        const auto expected = throughOracle(x, data.w, data.b, g, rule, r).first;
        expectClose(throughOp(x, data.w, data.b, std::nullopt, g, rule, r, {}, {}, true).first, expected,
            std::string(name) + " told non-negative");
        expectClose(throughOp(x, data.w, data.b, std::nullopt, g, rule, r, {}, {}, false).first, expected,
            std::string(name) + " looked at");
    }
}

TEST(RelevanceOps, ZBoxTakesTheBoundsPerChannel)
{
    const Data data = convolution(3);
    const auto d = at::TensorOptions().dtype(at::kDouble);
    const at::Tensor low = at::tensor({-2.1, -2.0, -1.8}, d), high = at::tensor({2.2, 2.4, 2.6}, d);
    const at::Tensor x = at::max(at::min(data.x, high.reshape({1, 3, 1, 1})), low.reshape({1, 3, 1, 1}));
    const Geometry g{{1, 1}, {1, 1}, {1, 1}};
    const RelevanceRule rule = RelevanceRule::parse("zbox");
    const at::Tensor r = at::randn_like(f(g, x, data.w, data.b));
    expectClose(throughOp(x, data.w, data.b, std::nullopt, g, rule, r, low, high).first,
        throughOracle(x, data.w, data.b, g, rule, r, low, high).first, "zbox");
}

TEST(RelevanceOps, TransposedConvolutionAndSamePadding)
{
    const Data data = convolution(4);
    {
        const at::Tensor w = at::randn({3, 4, 3, 3}, data.w.options()); // [in, out, kH, kW]
        const at::Tensor b = at::randn({4}, data.w.options());
        const Geometry g{{2, 2}, {1, 1}, {1, 1}, {1, 0}, "", true};
        for (const auto& name : {"epsilon", "zplus", "gamma:0.25"}) {
            const RelevanceRule rule = RelevanceRule::parse(name);
            const at::Tensor r = at::randn_like(f(g, data.x, w, b));
            const auto [relevance, out] = throughOp(data.x, w, b, std::nullopt, g, rule, r);
            const auto [expected, z] = throughOracle(data.x, w, b, g, rule, r);
            expectClose(out, z, std::string("transposed forward ") + name);
            expectClose(relevance, expected, std::string("transposed ") + name);
        }
    }
    const Geometry same{{1, 1}, {}, {2, 2}, {}, "same"};
    const RelevanceRule rule = RelevanceRule::parse("zplus");
    const at::Tensor r = at::randn_like(f(same, data.x, data.w, data.b));
    const auto [relevance, out] = throughOp(data.x, data.w, data.b, std::nullopt, same, rule, r);
    const auto [expected, z] = throughOracle(data.x, data.w, data.b, same, rule, r);
    expectClose(out, z, "padding='same' forward");
    expectClose(relevance, expected, "padding='same'");
}

TEST(RelevanceOps, LinearLayerOnTokens)
{
    at::manual_seed(5);
    const auto d = at::TensorOptions().dtype(at::kDouble);
    const at::Tensor x = at::randn({2, 5, 6}, d), w = at::randn({4, 6}, d), b = at::randn({4}, d);
    const Geometry g; // linear
    for (const auto& name : {"epsilon", "gamma:0.05", "zplus", "alphabeta:2:1"}) {
        const RelevanceRule rule = RelevanceRule::parse(name);
        const at::Tensor r = at::randn({2, 5, 4}, d);
        expectClose(throughOp(x, w, b, std::nullopt, g, rule, r).first, throughOracle(x, w, b, g, rule, r).first,
            std::string("linear ") + name);
    }
}

// Zennit's SequentialMergeBatchNorm, as the oracle writes it.
std::pair<at::Tensor, at::Tensor> merged(const at::Tensor& w, const at::Tensor& b, const Norm& norm)
{
    const at::Tensor scale = norm.weight / (norm.variance + norm.eps).sqrt();
    return {w * scale.reshape({-1, 1, 1, 1}), (b - norm.mean) * scale + norm.bias};
}

TEST(RelevanceOps, MergedBatchNormAndItsCacheFollowInPlaceChanges)
{
    const Data data = convolution(6);
    const auto d = data.w.options();
    Norm norm{at::rand({5}, d) + 0.5, at::randn({5}, d), at::randn({5}, d), at::rand({5}, d) + 0.2, 1e-3};
    const Geometry g{{1, 1}, {1, 1}, {1, 1}};
    const RelevanceRule rule = RelevanceRule::parse("zplus");
    const at::Tensor r = at::randn_like(f(g, data.x, data.w, data.b));
    const auto check = [&](const std::string& what) {
        const auto [w, b] = merged(data.w, data.b, norm);
        const auto [relevance, out] = throughOp(data.x, data.w, data.b, norm, g, rule, r);
        const auto [expected, z] = throughOracle(data.x, w, b, g, rule, r);
        expectClose(out, z, what + " forward");
        expectClose(relevance, expected, what);
    };
    check("merged");
    check("merged, again (the cached weights)");
    data.w.mul_(-0.5); // in place: the same tensor, a new version
    check("after the weight changed in place");
    norm.variance.add_(1.0);
    check("after the running variance changed in place");
}

TEST(RelevanceOps, SumSharesByTermsAndPassHandsRelevanceOn)
{
    relevance::registerRelevanceOps();
    at::manual_seed(7);
    const auto d = at::TensorOptions().dtype(at::kDouble);
    const at::Tensor a = at::randn({2, 3, 4, 5}, d).requires_grad_(true);
    const at::Tensor b = at::randn({1, 3, 1, 1}, d).requires_grad_(true); // broadcast
    const at::Tensor r = at::randn({2, 3, 4, 5}, d);
    static const auto sum = c10::Dispatcher::singleton()
                                .findSchemaOrThrow(relevance::SumOp, "")
                                .typed<at::Tensor(const at::Tensor&, const at::Tensor&, double)>();
    const at::Tensor out = sum.call(a, b, 1e-6);
    const auto got = torch::autograd::grad({out}, {a, b}, {r});
    const at::Tensor z = (a + b).detach();
    const at::Tensor t = (a * a.detach() + b * b.detach()) / stab(z, 1e-6);
    const auto expected = torch::autograd::grad({z + (t - t.detach())}, {a, b}, {r});
    expectClose(out.detach(), z, "sum forward");
    expectClose(got[0], expected[0], "sum: the first term");
    expectClose(got[1], expected[1], "sum: the broadcast term");

    static const auto pass = c10::Dispatcher::singleton()
                                 .findSchemaOrThrow(relevance::PassOp, "")
                                 .typed<at::Tensor(const at::Tensor&, const at::Tensor&)>();
    const at::Tensor activated = a.relu();
    const at::Tensor passed = pass.call(activated.detach(), a);
    expectClose(passed.detach(), activated.detach(), "pass forward");
    expectClose(torch::autograd::grad({passed}, {a}, {r})[0], r, "pass backward");
}

TEST(RelevanceOps, UnevenSamePaddingSaysWhatIsWrong)
{
    const Data data = convolution(8);
    const at::Tensor w = at::randn({5, 3, 2, 2}, data.w.options()); // an even kernel: padding 1 on one side
    const Geometry same{{1, 1}, {}, {1, 1}, {}, "same"};
    try {
        layerOp(data.x, w, data.b, std::nullopt, same, RelevanceRule::parse("epsilon"), {}, {}, false);
        FAIL() << "no error";
    } catch (const c10::Error& e) {
        EXPECT_NE(std::string(e.what_without_backtrace()).find("padding='same' pads unevenly"), std::string::npos)
            << e.what_without_backtrace();
    }
}

// The rewritten graph is cached by the settings' key, and rules compare by their text: a γ, ε or bound
// that differs only past a stream's 6 digits was the same key, so a second run on the loaded model with
// such a setting reused the first one's graph.
TEST(RelevanceSettingsKey, TellsEveryValueApart)
{
    EXPECT_NE(RelevanceRule::parse("gamma:0.1234567"), RelevanceRule::parse("gamma:0.1234568"));
    EXPECT_EQ(RelevanceRule::parse("gamma:0.1234567").toString(), "gamma:0.1234567");
    EXPECT_EQ(RelevanceRule::parse("epsilon").toString(), "epsilon:1e-06"); // what a coverage line shows
    RelevanceSettings a, b;
    a.overrides = {RuleOverride::parse("conv=epsilon:0.2500001")};
    b.overrides = {RuleOverride::parse("conv=epsilon:0.2500002")};
    EXPECT_NE(a.cacheKey(), b.cacheKey());
    b.overrides = a.overrides;
    EXPECT_EQ(a.cacheKey(), b.cacheKey());
    a.low = {-2.1179039, -2.0357142};
    b.low = {-2.1179039, -2.0357143};
    EXPECT_NE(a.cacheKey(), b.cacheKey());
}

} // namespace
} // namespace torchscope::test
