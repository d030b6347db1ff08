#pragma once

// Running differences between two runs' activations of one layer on the same inputs, batch by
// batch: only sums and maxima are kept.

#include "compare/comparison.h"

#include <ATen/core/Tensor.h>

namespace torchscope {

class DifferenceAccumulator {
public:
    explicit DifferenceAccumulator(std::string layer);

    // reference and other: [N, ...] of the same shape (any dtype or device); compared in float64.
    void add(const at::Tensor& reference, const at::Tensor& other);
    LayerDifference result() const; // without cka

private:
    LayerDifference difference_;
    double squaredReference_ = 0.0;
    double squaredDifference_ = 0.0;
    double maxAbsReference_ = 0.0;
    double cosineSum_ = 0.0;
    int64_t samples_ = 0;
};

} // namespace torchscope
