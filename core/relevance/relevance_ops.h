#pragma once

// LRP's rules as operators with a backward of their own, for the rewritten graph
// (relevance_graph.h). Each returns the forward value the model computes and, in the backward
// pass, the rule's relevance in the gradient's place:
//
//   torchscope::lrp_layer(Tensor x, Tensor weight, Tensor? bias, Tensor? norm_weight,
//       Tensor? norm_bias, Tensor? norm_mean, Tensor? norm_var, float norm_eps, int[] stride,
//       int[] padding, str padding_mode, int[] dilation, int[] output_padding, bool transposed,
//       int groups, int rule, float[] parameters, Tensor? low, Tensor? high, bool nonnegative)
//     a convolution (stride non-empty; transposed or not; padding by size, or named 'same' /
//     'valid') or a linear layer (stride empty), with the batch norm after it merged in where
//     norm_mean and norm_var are given: forward the layer's output z; backward, for an incoming
//     relevance R, the rule's R_in (RuleKind's order in `rule`; `parameters`: epsilon, gamma,
//     alpha, beta; `low` / `high`: zbox's bounds per channel [C]).
//     The rule's modified layers run in the backward pass only; what they are made of (W⁺, W⁻,
//     γ's weights, the merged weights) is made once per set of parameters and kept while those
//     are unchanged. An input that is nowhere negative (`nonnegative`: the graph says so, after a
//     ReLU; else looked at) skips the terms of x⁻, which are zero there.
//   torchscope::lrp_pass(Tensor output, Tensor x)
//     the identity rule: forward `output`, backward R passes on to x unchanged.
//   torchscope::lrp_sum(Tensor a, Tensor b, float stabiliser)
//     a + b forward; backward each term its share, a ⊙ R / stab(a + b) (the norm rule).
//
// Each is the gradient of the "modified gradient" form stop_grad(z) + (t − stop_grad(t))
// (relevance_graph.h), with Zennit's order of operations and stabilisers, computed directly: that
// form evaluates the rule's terms forward although only their gradient is used. Registered once
// per process by registerRelevanceOps(); the graph names them by these strings.

namespace torchscope::relevance {

inline constexpr const char* LayerOp = "torchscope::lrp_layer";
inline constexpr const char* PassOp = "torchscope::lrp_pass";
inline constexpr const char* SumOp = "torchscope::lrp_sum";

void registerRelevanceOps();

} // namespace torchscope::relevance
