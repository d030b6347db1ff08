#pragma once

// Two inputs at one layer: A's maps, B's maps and A − B, with the channels ranked by how much they
// differ. A and B share one colour scale (their joint min … max), A − B a symmetric one.

#include "common/float_tensor.h"

#include <cstdint>
#include <vector>

namespace at {
class Tensor;
}

namespace torchscope {

struct InputDifference {
    FloatTensor a, b, difference; // one sample's output each ([C, H, W], [F] ...); difference = a - b
    float low = 0.f, high = 0.f; // the scale A and B share
    float largest = 0.f; // max |A - B|: the difference is drawn on -largest … largest
    std::vector<double> channelDifference; // mean |A - B| per channel
    std::vector<int64_t> ranked; // channels by mean |A - B|, largest first (ties: lower number first)

    // The first `count` ranked channels of a, b or difference, in ranked order: [count, H, W].
    static FloatTensor rankedChannels(const FloatTensor& maps, const std::vector<int64_t>& ranked, size_t count);
};

// a and b: one sample's output of the same layer for two inputs, [C, ...] or [1, C, ...] of the same
// shape. Throws torchscope::Error naming both shapes when they differ.
InputDifference compareInputs(const at::Tensor& a, const at::Tensor& b);

} // namespace torchscope
