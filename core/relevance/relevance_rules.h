#pragma once

// Layer-wise Relevance Propagation's rules and composites, as Zennit names and defines them
// (zennit.rules, zennit.composites, 0.5.1), for the graph rewrite in relevance_graph.h. Torch-free.
//
// A rule says how a layer's relevance R_out goes to its input. With z = the layer's output and a
// rule's modified copies z_i = f(m_i(x); w_i), Zennit's BasicHook gives
//     R_in = Σ_i c_i · m_i(x) ⊙ Jᵢᵀ (R_out / stabilize(z_rule)),
// stabilize(z) = z + ε·sign(z) (ε = 1e-6, sign(0) = 1). The rules:
//   epsilon[:ε]      R_in = x ⊙ Wᵀ (R_out / stab(z, ε))                      (LRP-ε; ε = 0: LRP-0)
//   gamma[:γ]        the generalised γ (Zennit ≥ 0.5): where z > 0, x⁺ through W + γW⁺ (b + γb⁺) and
//                    x⁻ through W + γW⁻; where z < 0 the other way round (γ = 0.25). For x ≥ 0 and
//                    z > 0 the original W + γW⁺, b + γb⁺
//   zplus            α1β0: positive inputs through W⁺, negative through W⁻
//   alphabeta[:α:β]  α·(the z⁺ terms) − β·(the opposite signs), α − β = 1 (2, 1)
//   flat             every weight 1, every input 1: R spread uniformly over the receptive field
//   wsquare          W² over inputs of 1
//   zbox             x, the input's lowest and highest values through W, W⁺, W⁻ (the first layer)
//   norm             epsilon without weights (sums, pooling): R_in = x ⊙ Jᵀ (R_out / stab(z))
//   pass             R_in = R_out (element-wise activations: the identity rule)
//   gradient         the plain gradient (max pooling routes R to the maximum; reshapes move it)

#include "common/parameters.h"

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
// every layer). In each, sums and average pooling take norm (Zennit's stabiliser, 1e-6), element-wise
// activations pass. "epsilon0": ε = 0 for every layer and no stabiliser on sums: LRP-0, which with the
// identity and attention rules is LXT's Gradient × Input (its `efficient` form); LXT's recipe for a
// ViT adds type:Conv2d=gamma:0.25 and type:Linear=gamma:0.05 as overrides.
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
    // Overrides separated by spaces or semicolons (the window's rule field), each checked; throws
    // torchscope::Error for the first that does not parse.
    static std::vector<std::string> parseList(const std::string& text);
    std::string toString() const;
};

// How relevance crosses attention (LXT's definitions, lxt.efficient 2.1, in its Gradient × Input form):
//   cp        CP-LRP (Ali et al. 2022): queries and keys carry none, the attention weights are held
//             fixed, the values take it as a linear layer would (LXT's vit_torch cp_LRP)
//   attnlrp   AttnLRP (Achtibat et al. 2024): the uniform rule on the products q·kᵀ and A·v (q and
//             k get a quarter each, v half), the softmax by its gradient × input
// Both: LayerNorm's standard deviation held fixed (the identity rule on normalisation), element-wise
// activations pass (the identity rule), constants added as biases absorb their share.
const std::vector<std::string>& attentionRuleNames();

// What a relevance run rewrites the model's graph with.
// LRP's choices as a request names them (common/parameters.h), for attribute's lrp and crp alike:
// --composite, --attention-rule, and --rule PATH=RULE (each checked by RuleOverride::parse).
void visitLrpChoices(ParameterVisitor& v, std::string& composite, std::string& attentionRule);
Parameter ruleOverrideParameter();

struct RelevanceSettings {
    std::string composite = "epsilon_plus_flat";
    std::string attention = "cp"; // attentionRuleNames()
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
