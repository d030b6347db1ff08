#pragma once

#include <cstdint>
#include <functional>
#include <numeric>
#include <vector>

namespace torchscope {

// A tensor as plain values, for code that must not see Torch (the UI): shape and float data,
// row-major (contiguous).
struct FloatTensor {
    std::vector<int64_t> shape;
    std::vector<float> values;

    int64_t numel() const
    {
        return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<int64_t>());
    }
    bool empty() const { return values.empty(); }
};

} // namespace torchscope
