#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace torchscope {

// Statistics of one layer's values over a set of samples. Channels are dim 1 ([N, C, ...]);
// a [N, F] output has F channels of one value each.
struct LayerStatistics {
    std::vector<int64_t> shape; // of the whole recorded tensor
    int64_t samples = 0;
    double min = 0.0;
    double max = 0.0;
    double mean = 0.0;
    double zeroFraction = 0.0;
    std::vector<double> channelMean;
    std::vector<double> channelStd; // population standard deviation
    std::vector<double> channelMin;
    std::vector<double> channelMax;
    std::vector<double> channelZeroFraction;
    std::vector<int64_t> histogram; // counts over [histogramMin, histogramMax]
    double histogramMin = 0.0;
    double histogramMax = 0.0;
};

// One of a channel's most activating samples: its position in the dataset and its mean activation.
struct TopSample {
    int64_t sample = 0;
    double value = 0.0;
};

} // namespace torchscope
