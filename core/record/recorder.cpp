#include "record/recorder.h"

#include "common/error.h"
#include "common/strings.h"
#include "graph/engine.h"
#include "record/channel_pass.h"

#include <ATen/ATen.h>

#include <sstream>

namespace torchscope {

struct Recorder::Layer {
    int64_t samples = 0;
    std::vector<int64_t> sampleShape;
    std::vector<at::Tensor> kept; // Reduction::None, on the CPU
    at::Tensor accumulated; // Sum, Mean (float64), Max, Min
    // Reduction::Stats: per-channel totals (float64, on the model's device) and the top-k.
    ChannelPass totals;
    at::Tensor topValues, topSamples;
    double low = 0.0, high = 0.0;
};

Recorder::Recorder(RecorderConfig config)
    : config_(std::move(config))
{ }

Recorder::~Recorder() = default;

int64_t Recorder::samples(const std::string& key) const
{
    const auto it = layers_.find(key);
    return it == layers_.end() ? 0 : it->second->samples;
}

void Recorder::add(const RunResult& result, const std::vector<int64_t>& sampleIds, const at::Tensor& selected)
{
    for (const auto& [key, value] : result.values) {
        if (key == "output" || !value.isTensor())
            continue;
        at::Tensor values = value.toTensor().detach();
        if (values.dim() == 0 || values.size(0) != static_cast<int64_t>(sampleIds.size()))
            throw Error("'" + key + "' has shape " + shapeToString(values.sizes().vec())
                + ", not one row per sample of the " + std::to_string(sampleIds.size())
                + "-image batch; it cannot be recorded per sample");
        const at::Tensor rows = selected.to(values.device()).nonzero().flatten();
        if (rows.numel() == 0)
            continue;
        values = values.index_select(0, rows);
        const at::Tensor ids = at::tensor(sampleIds, at::kLong).to(values.device()).index_select(0, rows);

        auto& slot = layers_[key];
        if (!slot) {
            slot = std::make_unique<Layer>();
            slot->sampleShape = std::vector<int64_t>(values.sizes().begin() + 1, values.sizes().end());
            order_.push_back(key);
        }
        Layer& layer = *slot;
        const std::vector<int64_t> shape(values.sizes().begin() + 1, values.sizes().end());
        if (shape != layer.sampleShape)
            throw Error("'" + key + "' changed shape between batches (" + shapeToString(layer.sampleShape) + " then "
                + shapeToString(shape) + "); use a preprocessing with a fixed size");

        switch (config_.reduction) {
        case Reduction::None: {
            const int64_t bytes = values.numel() * static_cast<int64_t>(values.element_size());
            if (keptBytes_ + bytes > config_.memoryCapBytes)
                throw Error("keeping every sample would pass the memory cap of "
                    + std::to_string(config_.memoryCapBytes >> 20) + " MiB at '" + key + "' after "
                    + std::to_string(layer.samples)
                    + " samples; use a reduction (sum, mean, max, min, stats) or raise the cap");
            keptBytes_ += bytes;
            layer.kept.push_back(values.cpu());
            break;
        }
        case Reduction::Sum:
        case Reduction::Mean: {
            const at::Tensor sum = values.to(at::kDouble).sum(0);
            layer.accumulated = layer.accumulated.defined() ? layer.accumulated + sum : sum;
            break;
        }
        case Reduction::Max: {
            const at::Tensor max = values.amax(0);
            layer.accumulated = layer.accumulated.defined() ? at::maximum(layer.accumulated, max) : max;
            break;
        }
        case Reduction::Min: {
            const at::Tensor min = values.amin(0);
            layer.accumulated = layer.accumulated.defined() ? at::minimum(layer.accumulated, min) : min;
            break;
        }
        case Reduction::Stats:
            addStats(layer, values, ids);
            break;
        }
        layer.samples += values.size(0);
    }
}

void Recorder::addStats(Layer& layer, const at::Tensor& values, const at::Tensor& ids)
{
    if (!layer.totals.count.defined()) {
        if (config_.histogramRange) {
            layer.low = config_.histogramRange->first;
            layer.high = config_.histogramRange->second;
        } else { // from the first batch, with a margin; values outside are counted as below/above
            const ChannelPass range = channelPass(values, 0, 0.0, 0.0);
            const double lo = range.minimum.min().item<double>(), hi = range.maximum.max().item<double>();
            const double margin = hi > lo ? 0.1 * (hi - lo) : 0.5;
            layer.low = lo == 0.0 ? 0.0 : lo - margin; // keep ReLU outputs' zeros on the first edge
            layer.high = hi + margin;
        }
    }
    const ChannelPass batch = channelPass(values, config_.histogramBins, layer.low, layer.high);
    mergeInto(layer.totals, batch);

    // Top-k samples per channel by their mean activation (the deep-visualization-toolbox view).
    const at::Tensor sampleIds = ids.to(batch.perSample.device()).unsqueeze(1).expand_as(batch.perSample);
    at::Tensor candidates = batch.perSample, candidateIds = sampleIds;
    if (layer.topValues.defined()) {
        candidates = at::cat({layer.topValues, batch.perSample});
        candidateIds = at::cat({layer.topSamples, sampleIds});
    }
    const int64_t k = std::min<int64_t>(config_.topK, candidates.size(0));
    const auto [top, where] = candidates.topk(k, 0);
    layer.topValues = top;
    layer.topSamples = candidateIds.gather(0, where);
}

NamedValues Recorder::results() const
{
    NamedValues values;
    for (const auto& key : order_) {
        const Layer& layer = *layers_.at(key);
        values.emplace_back(key + ":samples", at::tensor(layer.samples, at::kLong));
        switch (config_.reduction) {
        case Reduction::None:
            values.emplace_back(key, at::cat(layer.kept));
            break;
        case Reduction::Sum:
            values.emplace_back(key, layer.accumulated.cpu());
            break;
        case Reduction::Mean:
            values.emplace_back(key, (layer.accumulated / double(layer.samples)).cpu());
            break;
        case Reduction::Max:
        case Reduction::Min:
            values.emplace_back(key, layer.accumulated.cpu());
            break;
        case Reduction::Stats: {
            const ChannelPass& t = layer.totals;
            const at::Tensor variance = t.m2 / t.count;
            values.emplace_back(key + ":mean", t.mean.cpu());
            values.emplace_back(key + ":var", variance.cpu());
            values.emplace_back(key + ":std", variance.sqrt().cpu());
            values.emplace_back(key + ":min", t.minimum.cpu());
            values.emplace_back(key + ":max", t.maximum.cpu());
            values.emplace_back(key + ":zero_fraction", (t.zeros / t.count).cpu());
            values.emplace_back(key + ":histogram", t.histogram.cpu());
            values.emplace_back(key + ":histogram_range", at::tensor({layer.low, layer.high}, at::kDouble));
            values.emplace_back(key + ":histogram_outside", at::tensor({t.below, t.above}, at::kLong));
            values.emplace_back(key + ":top_values", layer.topValues.cpu());
            values.emplace_back(key + ":top_samples", layer.topSamples.cpu());
            break;
        }
        }
    }
    return values;
}

std::map<std::string, LayerStatistics> Recorder::statistics() const
{
    std::map<std::string, LayerStatistics> all;
    if (config_.reduction != Reduction::Stats)
        return all;
    for (const auto& key : order_) {
        const Layer& layer = *layers_.at(key);
        std::vector<int64_t> shape = layer.sampleShape;
        shape.insert(shape.begin(), layer.samples);
        LayerStatistics s = toLayerStatistics(layer.totals, shape, layer.low, layer.high);
        all[key] = std::move(s);
    }
    return all;
}

std::map<std::string, std::vector<std::vector<TopSample>>> Recorder::topSamples() const
{
    std::map<std::string, std::vector<std::vector<TopSample>>> all;
    if (config_.reduction != Reduction::Stats)
        return all;
    for (const auto& key : order_) {
        const Layer& layer = *layers_.at(key);
        const at::Tensor ids = layer.topSamples.t().contiguous().cpu(); // [C, k]
        const at::Tensor values = layer.topValues.t().to(at::kDouble).contiguous().cpu();
        auto& channels = all[key];
        for (int64_t c = 0; c < ids.size(0); ++c) {
            auto& top = channels.emplace_back();
            const int64_t* id = ids[c].data_ptr<int64_t>();
            const double* value = values[c].data_ptr<double>();
            for (int64_t k = 0; k < ids.size(1); ++k)
                top.push_back({id[k], value[k]});
        }
    }
    return all;
}

std::string Recorder::channelCsv() const
{
    std::ostringstream csv;
    csv.precision(9);
    csv << "layer,channel,samples,mean,std,min,max,zero_fraction\n";
    const auto all = statistics();
    for (const auto& key : order_) { // in the order the layers were grabbed
        const auto it = all.find(key);
        if (it == all.end())
            continue;
        const LayerStatistics& s = it->second;
        for (size_t c = 0; c < s.channelMean.size(); ++c)
            csv << key << ',' << c << ',' << s.samples << ',' << s.channelMean[c] << ',' << s.channelStd[c] << ','
                << s.channelMin[c] << ',' << s.channelMax[c] << ',' << s.channelZeroFraction[c] << '\n';
    }
    return csv.str();
}

} // namespace torchscope
