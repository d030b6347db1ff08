#pragma once

// LRP on the loaded graph: the model's forward rewritten so that the gradient of an output score
// with respect to the input is that score's Layer-wise Relevance (relevance_rules.h), never by
// changing the loaded model. Each layer the rules cover becomes
//     out = stop_grad(z) + (t − stop_grad(t)),
// the same value z forward, with the rule's backward in t: for ε, t = f(x ⊙ stop_grad(x); W) /
// stop_grad(stabilize(z)), whose gradient maps an incoming relevance R to x ⊙ Wᵀ(R / stab(z)), as
// Zennit's hooks do, relevance travelling in the gradient's place. So one backward pass from the
// score (seeded with 1 per image) gives the relevance at the input; scaled by the score it is
// conserved to the logit where the rules conserve. Convolutions, linear layers, residual sums and
// activations take this form as operators with a backward of their own (relevance_ops.h), which
// run the rule's terms in the backward pass only; the other covered ops as graph expressions.
//
// Canonised on the graph, not the model: a batch norm right after a convolution or linear layer
// (its only use) is merged into it (Zennit's SequentialMergeBatchNorm, for any model), a residual
// sum splits relevance by its terms' shares (norm), average pooling and means take norm,
// element-wise activations pass relevance on. What the rules do not cover keeps its gradient and
// is named in the coverage. Includes Torch: for the instrumenter only.

#include "relevance/relevance_rules.h"

#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/ir.h>

#include <string>
#include <utility>
#include <vector>

namespace torchscope {

// An override with its selector resolved to module paths (a layer inside one of them takes it).
struct ResolvedRuleOverride {
    std::vector<std::string> paths;
    RelevanceRule rule;
};

// Inlines every module and function call of `graph` (keeping which module each op came from),
// then rewrites it. Throws torchscope::Error (zbox without input bounds, a rule for an op it
// cannot apply to).
// `module`: the model the graph is the forward of (a layer's optional bias is read from it).
RelevanceCoverage rewriteForRelevance(torch::jit::Graph& graph, const torch::jit::Module& module,
    const RelevanceSettings& settings, const std::vector<ResolvedRuleOverride>& overrides);

} // namespace torchscope
