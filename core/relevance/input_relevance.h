#pragma once

// LRP as an attribution method: the relevance of each input value for a class score, from one
// backward pass through the model's graph rewritten by its rules (relevance_graph.h). Seeded with
// the score itself, so that the input relevance sums to the explained logit where the rules
// conserve (Zennit's attributor seeded with one-hot × logit; LXT's gradient × input).

#include "attribution/model_scores.h"
#include "relevance/relevance_rules.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace torchscope {

class Engine;
struct Preprocessing;

struct InputRelevance {
    at::Tensor relevance; // [N, C, H, W] float32 on the input's device
    int64_t target = -1;
    std::string description;
    double score = 0.0; // the explained logit, summed over the batch
    RelevanceCoverage coverage;
};

// `target` < 0: the prediction. Throws torchscope::Error for a model whose output has no class
// scores, for a probe (its classes are not the model's), and for a wrong rule or composite.
InputRelevance inputRelevance(Engine& engine, const at::Tensor& batch, const ScoreSource& source, int64_t target,
    const RelevanceSettings& settings);

// The lowest and highest value of each input channel (zbox's bounds): pixels in [0, 1] through
// the preprocessing's scale, mean and std.
std::pair<std::vector<double>, std::vector<double>> inputRange(const Preprocessing& preprocessing);

} // namespace torchscope
