#include "record/channel_pass.h"

#include "common/tensor_conversion.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace torchscope {

namespace {

ChannelPass onDevice(const at::Tensor& input, int bins, double low, double high)
{
    const at::Tensor v = input.dim() == 1 ? input.unsqueeze(1) : input;
    std::vector<int64_t> dims{0};
    for (int64_t d = 2; d < v.dim(); ++d)
        dims.push_back(d);
    const double count = double(v.numel() / v.size(1));
    const auto [variance, mean] = at::var_mean(v, dims, /*unbiased=*/false, /*keepdim=*/false);
    ChannelPass pass;
    pass.count = at::full({v.size(1)}, count, mean.options().dtype(at::kDouble));
    pass.mean = mean.to(at::kDouble);
    pass.m2 = variance.to(at::kDouble) * count;
    pass.minimum = v.amin(dims).to(at::kDouble);
    pass.maximum = v.amax(dims).to(at::kDouble);
    pass.zeros = (v == 0).sum(dims).to(at::kDouble);
    const std::vector<int64_t> spatial(dims.begin() + 1, dims.end());
    pass.perSample = (spatial.empty() ? v : v.mean(spatial)).to(at::kDouble);
    if (bins > 0) {
        const at::Tensor flat = v.reshape({-1}).to(at::kFloat);
        pass.histogram = at::histc(flat, bins, low, high).to(at::kDouble);
        pass.below = (flat < low).sum().item<int64_t>();
        pass.above = (flat > high).sum().item<int64_t>();
    }
    return pass;
}

} // namespace

ChannelPass channelPass(const at::Tensor& input, int bins, double low, double high)
{
    if (!input.device().is_cpu())
        return onDevice(input, bins, low, high);
    const at::Tensor v = (input.dim() == 1 ? input.unsqueeze(1) : input).to(at::kCPU, at::kFloat).contiguous();
    const int64_t n = v.size(0), channels = v.size(1), positions = v.numel() / std::max<int64_t>(1, n * channels);
    const auto options = at::TensorOptions().dtype(at::kDouble);
    ChannelPass pass;
    pass.count = at::full({channels}, double(n * positions), options);
    pass.mean = at::empty({channels}, options);
    pass.m2 = at::empty({channels}, options);
    pass.minimum = at::empty({channels}, options);
    pass.maximum = at::empty({channels}, options);
    pass.zeros = at::empty({channels}, options);
    pass.perSample = at::empty({n, channels}, options);
    std::vector<double> histograms(static_cast<size_t>(channels) * std::max(bins, 0), 0.0);
    std::vector<int64_t> below(static_cast<size_t>(channels), 0), above(static_cast<size_t>(channels), 0);
    const double scale = bins > 0 && high > low ? bins / (high - low) : 0.0;

    const float* data = v.data_ptr<float>();
    double* mean = pass.mean.data_ptr<double>();
    double* m2 = pass.m2.data_ptr<double>();
    double* minimum = pass.minimum.data_ptr<double>();
    double* maximum = pass.maximum.data_ptr<double>();
    double* zeros = pass.zeros.data_ptr<double>();
    double* perSample = pass.perSample.data_ptr<double>();
    at::parallel_for(0, channels, 1, [&](int64_t begin, int64_t end) {
        for (int64_t c = begin; c < end; ++c) {
            double count = 0, channelMean = 0, channelM2 = 0, zeroCount = 0;
            float lo = std::numeric_limits<float>::infinity(), hi = -lo;
            double* histogram = histograms.data() + static_cast<size_t>(c) * std::max(bins, 0);
            for (int64_t s = 0; s < n; ++s) {
                const float* row = data + (s * channels + c) * positions;
                double sum = 0;
                for (int64_t i = 0; i < positions; ++i) {
                    const float x = row[i];
                    sum += x;
                    lo = std::min(lo, x);
                    hi = std::max(hi, x);
                    zeroCount += x == 0.0f;
                    if (bins > 0) {
                        if (x < low)
                            ++below[static_cast<size_t>(c)];
                        else if (x > high)
                            ++above[static_cast<size_t>(c)];
                        else // histc's rule: the top edge belongs to the last bin
                            histogram[std::min<int64_t>(bins - 1, static_cast<int64_t>((x - low) * scale))] += 1;
                    }
                }
                // The row's squared deviations in a second pass while it is still in cache (no
                // cancellation as in sum-of-squares), then merged into the channel's (Chan et al.).
                const double rowMean = sum / positions;
                double rowM2 = 0;
                for (int64_t i = 0; i < positions; ++i)
                    rowM2 += (row[i] - rowMean) * (row[i] - rowMean);
                const double total = count + positions;
                const double delta = rowMean - channelMean;
                channelM2 += rowM2 + delta * delta * count * positions / total;
                channelMean += delta * positions / total;
                count = total;
                perSample[s * channels + c] = rowMean;
            }
            mean[c] = channelMean;
            m2[c] = channelM2;
            minimum[c] = lo;
            maximum[c] = hi;
            zeros[c] = zeroCount;
        }
    });
    if (bins > 0) {
        pass.histogram = at::zeros({bins}, options);
        double* histogram = pass.histogram.data_ptr<double>();
        for (int64_t c = 0; c < channels; ++c)
            for (int b = 0; b < bins; ++b)
                histogram[b] += histograms[static_cast<size_t>(c) * bins + b];
        for (int64_t c = 0; c < channels; ++c) {
            pass.below += below[static_cast<size_t>(c)];
            pass.above += above[static_cast<size_t>(c)];
        }
    }
    return pass;
}

void mergeInto(ChannelPass& total, const ChannelPass& batch)
{
    if (!total.count.defined()) {
        total = batch;
        return;
    }
    const at::Tensor count = total.count + batch.count;
    const at::Tensor delta = batch.mean - total.mean;
    total.m2 = total.m2 + batch.m2 + delta.pow(2) * total.count * batch.count / count;
    total.mean = total.mean + delta * batch.count / count;
    total.count = count;
    total.minimum = at::minimum(total.minimum, batch.minimum);
    total.maximum = at::maximum(total.maximum, batch.maximum);
    total.zeros = total.zeros + batch.zeros;
    if (batch.histogram.defined())
        total.histogram = total.histogram.defined() ? total.histogram + batch.histogram : batch.histogram;
    total.below += batch.below;
    total.above += batch.above;
}

LayerStatistics toLayerStatistics(const ChannelPass& totals, const std::vector<int64_t>& shape, double low, double high)
{
    LayerStatistics s;
    s.shape = shape;
    s.samples = shape.empty() ? 0 : shape.front();
    s.channelMean = toDoubles(totals.mean);
    s.channelStd = toDoubles((totals.m2 / totals.count).sqrt());
    s.channelMin = toDoubles(totals.minimum);
    s.channelMax = toDoubles(totals.maximum);
    s.channelZeroFraction = toDoubles(totals.zeros / totals.count);
    s.min = totals.minimum.min().item<double>();
    s.max = totals.maximum.max().item<double>();
    s.mean = ((totals.mean * totals.count).sum() / totals.count.sum()).item<double>();
    s.zeroFraction = (totals.zeros.sum() / totals.count.sum()).item<double>();
    if (totals.histogram.defined())
        for (double count : toDoubles(totals.histogram))
            s.histogram.push_back(static_cast<int64_t>(count));
    s.histogramMin = low;
    s.histogramMax = high;
    return s;
}

} // namespace torchscope
