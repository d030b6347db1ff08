#include "record/tensor_statistics.h"

#include "common/error.h"
#include "common/strings.h"
#include "record/channel_pass.h"

#include <ATen/ATen.h>

#include <algorithm>

namespace torchscope {

LayerStatistics computeLayerStatistics(const at::Tensor& input, int bins)
{
    if (input.dim() < 1 || input.numel() == 0)
        throw Error("statistics need a non-empty tensor, got shape " + shapeToString(input.sizes().vec()));
    // The recorder's channel pass, twice: once for the range, once with the histogram over it.
    const ChannelPass range = channelPass(input, 0, 0.0, 0.0);
    const double lo = range.minimum.min().item<double>(), hi = range.maximum.max().item<double>();
    const ChannelPass pass = channelPass(input, bins, lo, hi > lo ? hi : lo + 1.0);

    return toLayerStatistics(pass, input.sizes().vec(), lo, hi > lo ? hi : lo + 1.0);
}

at::Tensor topRowsPerChannel(const at::Tensor& values, const at::Tensor& ids, int64_t k)
{
    const auto [sortedIds, byId] = ids.sort(0);
    const auto order = std::get<1>(at::sort(values.gather(0, byId), /*stable=*/true, /*dim=*/0, /*descending=*/true));
    return byId.gather(0, order).narrow(0, 0, std::min(k, values.size(0)));
}

} // namespace torchscope
