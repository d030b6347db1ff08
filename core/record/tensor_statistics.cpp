#include "record/tensor_statistics.h"

#include "common/error.h"
#include "common/strings.h"

#include <ATen/ATen.h>

namespace torchscope {
namespace {

std::vector<double> toDoubles(const at::Tensor& t)
{
    const at::Tensor cpu = t.to(at::kDouble).cpu().contiguous();
    return std::vector<double>(cpu.data_ptr<double>(), cpu.data_ptr<double>() + cpu.numel());
}

} // namespace

LayerStatistics computeLayerStatistics(const at::Tensor& input, int bins)
{
    if (input.dim() < 1 || input.numel() == 0)
        throw Error("statistics need a non-empty tensor, got shape " + shapeToString(input.sizes().vec()));
    const at::Tensor values = input.detach().to(at::kFloat);
    LayerStatistics stats;
    stats.shape = values.sizes().vec();
    stats.samples = values.size(0);
    // [channels, everything else]: channel c holds all samples and positions of channel c.
    const at::Tensor perChannel
        = values.dim() == 1 ? values.reshape({1, -1}) : values.transpose(0, 1).reshape({values.size(1), -1});
    const at::Tensor mean = perChannel.to(at::kDouble).mean(1);
    stats.channelMean = toDoubles(mean);
    stats.channelStd = toDoubles(perChannel.to(at::kDouble).std(1, /*unbiased=*/false));
    stats.channelMin = toDoubles(std::get<0>(perChannel.min(1)));
    stats.channelMax = toDoubles(std::get<0>(perChannel.max(1)));
    stats.channelZeroFraction = toDoubles((perChannel == 0).to(at::kDouble).mean(1));
    stats.min = values.min().item<double>();
    stats.max = values.max().item<double>();
    stats.mean = values.to(at::kDouble).mean().item<double>();
    stats.zeroFraction = (values == 0).to(at::kDouble).mean().item<double>();
    stats.histogramMin = stats.min;
    stats.histogramMax = stats.max > stats.min ? stats.max : stats.min + 1.0;
    const at::Tensor counts = at::histc(values.flatten().cpu(), bins, stats.histogramMin, stats.histogramMax);
    for (int64_t i = 0; i < counts.numel(); ++i)
        stats.histogram.push_back(static_cast<int64_t>(counts[i].item<float>()));
    return stats;
}

} // namespace torchscope
