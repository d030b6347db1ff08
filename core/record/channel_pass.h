#pragma once

#include "record/layer_statistics.h"

#include <ATen/core/Tensor.h>

#include <vector>

namespace torchscope {

// Per-channel statistics of one batch.
struct ChannelPass {
    at::Tensor count; // [C] values per channel (N * positions), float64
    at::Tensor mean; // [C] float64
    at::Tensor m2; // [C] sum of squared deviations from the mean, float64
    at::Tensor minimum; // [C] float64
    at::Tensor maximum; // [C] float64
    at::Tensor zeros; // [C] float64
    at::Tensor histogram; // [bins] float64 over [low, high]; empty when bins == 0
    at::Tensor perSample; // [N, C] mean of each sample's channel, float64
    int64_t below = 0; // values < low
    int64_t above = 0; // values > high
};

// values: [N, C, ...]. On the CPU: one pass over memory, channels in parallel
// (at::parallel_for); each (sample, channel) row gets its mean and squared deviations in float64
// while it is in cache, and rows are merged with Chan's formula. Elsewhere (CUDA): the same
// numbers from ATen reductions on the device. bins == 0: no histogram.
ChannelPass channelPass(const at::Tensor& values, int bins, double low, double high);

// Adds a batch's pass to running totals (Chan et al.'s pairwise update for mean and M2: stable
// where the naive sum of squares is not). An empty `total` becomes the batch.
void mergeInto(ChannelPass& total, const ChannelPass& batch);

// Totals as plain values. `shape` is the whole recorded shape, [samples, ...].
LayerStatistics toLayerStatistics(
    const ChannelPass& totals, const std::vector<int64_t>& shape, double low, double high);

} // namespace torchscope
