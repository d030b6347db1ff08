#pragma once

// The mean and standard deviation (as numpy.std: over n) of the finite values of a list, the
// others (NaN for an image not evaluated) left out: what the per-image figures are summarised by.

#include <vector>

namespace torchscope {

struct FiniteSummary {
    double mean; // NaN when no value is finite
    double sd;
    int count;
};

FiniteSummary summariseFinite(const std::vector<double>& values);

} // namespace torchscope
