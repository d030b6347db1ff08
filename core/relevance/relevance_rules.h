#pragma once

// Layer-wise Relevance Propagation's rules and composites, as Zennit names and defines them
// (zennit.rules, zennit.composites, 0.4.6), for the graph rewrite in relevance_graph.h. Torch-free.
//
// A rule says how a layer's relevance R_out goes to its input. With z = the layer's output and a
// rule's modified copies z_i = f(m_i(x); w_i), Zennit's BasicHook gives
//     R_in = Σ_i c_i · m_i(x) ⊙ Jᵢᵀ (R_out / stabilize(z_rule)),
// stabilize(z) = z + ε·sign(z) (ε = 1e-6, sign(0) = 1). The rules:
//   epsilon[:ε]      R_in = x ⊙ Wᵀ (R_out / stab(z, ε))                      (LRP-ε; ε = 0: LRP-0)
//   gamma[:γ]        W + γW⁺, b + γb⁺ in place of W, b (γ = 0.25)
//   zplus            α1β0: positive inputs through W⁺, negative through W⁻
//   alphabeta[:α:β]  α·(the z⁺ terms) − β·(the opposite signs), α − β = 1 (2, 1)
//   flat             every weight 1, every input 1: R spread uniformly over the receptive field
//   wsquare          W² over inputs of 1
//   zbox             x, the input's lowest and highest values through W, W⁺, W⁻ (the first layer)
//   norm             epsilon without weights (sums, pooling): R_in = x ⊙ Jᵀ (R_out / stab(z))
//   pass             R_in = R_out (element-wise activations: the identity rule)
//   gradient         the plain gradient (max pooling routes R to the maximum; reshapes move it)

#include <string>
#include <vector>

namespace torchscope {

enum class RuleKind { Epsilon, Gamma, ZPlus, AlphaBeta, Flat, WSquare, ZBox, Norm, Pass, Gradient };

struct RelevanceRule {
    RuleKind kind = RuleKind::Epsilon;
    double epsilon = 1e-6; // epsilon; the stabiliser of the others
    double gamma = 0.25;
    double alpha = 2.0, beta = 1.0;

    // "epsilon", "epsilon:0.25", "gamma:0.1", "zplus", "alphabeta:2:1", "flat", "wsquare", "zbox",
    // "norm", "pass", "gradient". Throws torchscope::Error naming the rules.
    static RelevanceRule parse(const std::string& text);
    std::string toString() const;
    bool operator==(const RelevanceRule& other) const;
};

// What kind of layer a node is, for a composite.
enum class LayerKind { Convolution, Dense };

// Zennit's composites by their registered names: epsilon_plus_flat, epsilon_plus,
// epsilon_alpha2_beta1, epsilon_alpha2_beta1_flat, epsilon_gamma_box; and "epsilon" (ε = 1e-6 for
// every layer). In each, sums and average pooling take norm, element-wise activations pass.
const std::vector<std::string>& compositeNames();
// The rule the composite gives a layer; `first`: the first convolution or dense layer the input
// reaches (Zennit's first layer: any linear layer for the _flat composites, a convolution for
// epsilon_gamma_box). Throws torchscope::Error for an unknown name.
RelevanceRule compositeRule(const std::string& composite, LayerKind kind, bool first);

// "PATH=RULE": the layers a grab selector names (a path, a glob as layer3.*, type:Conv2d) take RULE
// instead of the composite's.
struct RuleOverride {
    std::string selector;
    RelevanceRule rule;
    static RuleOverride parse(const std::string& text);
    std::string toString() const;
};

// What a relevance run rewrites the model's graph with.
struct RelevanceSettings {
    std::string composite = "epsilon_plus_flat";
    std::vector<RuleOverride> overrides;
    // zbox: the lowest and highest value of each input channel, as the preprocessing makes them
    // from pixels in [0, 1] ((0 − mean) / std, (1 − mean) / std); empty: zbox is refused.
    std::vector<double> low, high;
    std::string cacheKey() const;
};

// What a rewrite did: every layer's rule, and the ops no rule covers (their gradient passes).
struct RelevanceCoverage {
    std::vector<std::string> layers; // "features.0 conv2d: flat", in graph order
    std::vector<std::string> uncovered; // "aten::mul in features.3.se (2 nodes): its plain gradient"
};

} // namespace torchscope
