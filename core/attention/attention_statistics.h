#pragma once

// Per-head figures of attention probabilities [N, heads, queries, keys], for the attention maps
// and for recorders folding them over a folder:
//  - entropy: the mean over queries of -Σ p ln p (nats); ln K for a head that attends evenly;
//  - mean attention distance (Dosovitskiy et al. 2021, Fig. 7): over the patch queries, the mean
//    of Σ over patch keys of p · (the two patches' distance), in patches; attention to the prefix
//    tokens counts as no distance.

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace torchscope {

struct RunResult;

at::Tensor attentionEntropy(const at::Tensor& probabilities); // [N, H] float32

// prefix tokens, then a gridHeight × gridWidth patch grid; [N, H] float32 in patches.
at::Tensor attentionDistance(const at::Tensor& probabilities, int64_t prefix, int64_t gridHeight, int64_t gridWidth);

// For every PATH:attention value of a run, adds PATH:entropy and, where its keys are a few prefix
// tokens and a square patch grid (the largest square they hold), PATH:distance: what a recording
// folds per head.
void addAttentionFigures(RunResult& result);

} // namespace torchscope
