#include "record/tensor_statistics.h"

#include "common/error.h"
#include "common/strings.h"
#include "common/tensor_conversion.h"
#include "record/channel_pass.h"

#include <ATen/ATen.h>

namespace torchscope {

LayerStatistics computeLayerStatistics(const at::Tensor& input, int bins)
{
    if (input.dim() < 1 || input.numel() == 0)
        throw Error("statistics need a non-empty tensor, got shape " + shapeToString(input.sizes().vec()));
    // The recorder's channel pass, twice: once for the range, once with the histogram over it.
    const ChannelPass range = channelPass(input, 0, 0.0, 0.0);
    const double lo = range.minimum.min().item<double>(), hi = range.maximum.max().item<double>();
    const ChannelPass pass = channelPass(input, bins, lo, hi > lo ? hi : lo + 1.0);

    LayerStatistics stats;
    stats.shape = input.sizes().vec();
    stats.samples = input.size(0);
    stats.channelMean = toDoubles(pass.mean);
    stats.channelStd = toDoubles((pass.m2 / pass.count).sqrt());
    stats.channelMin = toDoubles(pass.minimum);
    stats.channelMax = toDoubles(pass.maximum);
    stats.channelZeroFraction = toDoubles(pass.zeros / pass.count);
    stats.min = lo;
    stats.max = hi;
    stats.mean = ((pass.mean * pass.count).sum() / pass.count.sum()).item<double>();
    stats.zeroFraction = (pass.zeros.sum() / pass.count.sum()).item<double>();
    for (double count : toDoubles(pass.histogram))
        stats.histogram.push_back(static_cast<int64_t>(count));
    stats.histogramMin = lo;
    stats.histogramMax = hi > lo ? hi : lo + 1.0;
    return stats;
}

} // namespace torchscope
