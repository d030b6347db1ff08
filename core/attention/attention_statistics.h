#pragma once

// Per-head figures of attention probabilities [N, heads, queries, keys], for the attention maps
// and for recorders folding them over a folder:
//  - entropy: the mean over queries of -Σ p ln p (nats); ln K for a head that attends evenly;
//  - mean attention distance (Dosovitskiy et al. 2021, Fig. 7): over the patch queries, the mean
//    of Σ over patch keys of p · (the two patches' distance), in patches; attention to the prefix
//    tokens counts as no distance.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace torchscope {

class Model;
struct RunResult;

at::Tensor attentionEntropy(const at::Tensor& probabilities); // [N, H] float32

// prefix tokens, then a gridHeight × gridWidth patch grid; [N, H] float32 in patches.
at::Tensor attentionDistance(const at::Tensor& probabilities, int64_t prefix, int64_t gridHeight, int64_t gridWidth);

// For every PATH:attention value of a run on a batch of images [N, C, H, W], adds PATH:entropy
// [N, heads] and, where the keys are the prefix tokens and the images' patch grid
// (attention/attention_maps.h's tokenLayout), PATH:distance [N, heads] in pixels: what a recording
// folds per head, as `torchscope-cli attention` writes them. Windows (Swin) count per image, their
// entropy averaged.
void addAttentionFigures(RunResult& result, const Model& model, const std::vector<int64_t>& batchShape);

} // namespace torchscope
