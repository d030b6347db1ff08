#include "record/recorder.h"

#include "common/error.h"
#include "common/strings.h"
#include "graph/engine.h"
#include "record/channel_pass.h"
#include "record/tensor_statistics.h"

#include <ATen/ATen.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <algorithm>
#include <optional>
#include <sstream>
#include <tuple>

namespace torchscope {
namespace {

// A histogram range from a layer's first batch, with a margin; later values outside it are
// counted as below or above.
std::pair<double, double> rangeOfFirstBatch(const at::Tensor& values)
{
    const ChannelPass range = channelPass(values, 0, 0.0, 0.0);
    const double lo = range.minimum.min().item<double>(), hi = range.maximum.max().item<double>();
    const double margin = hi > lo ? 0.1 * (hi - lo) : 0.5;
    return {lo == 0.0 ? 0.0 : lo - margin, hi + margin}; // keep ReLU outputs' zeros on the first edge
}

std::pair<at::Tensor, at::Tensor> topPerChannel(const at::Tensor& values, const at::Tensor& ids, int64_t k)
{
    const at::Tensor rows = topRowsPerChannel(values, ids, k);
    return {values.gather(0, rows), ids.gather(0, rows)};
}

// A grabbed value's rows that the condition selected, with their sample ids; nothing when the
// key is not recorded or no row is selected.
std::optional<std::pair<at::Tensor, at::Tensor>> selectedRows(
    const std::string& key, const c10::IValue& value, const std::vector<int64_t>& sampleIds, const at::Tensor& selected)
{
    if (key == "output" || !value.isTensor())
        return std::nullopt;
    at::Tensor values = value.toTensor().detach();
    if (values.dim() == 0 || values.size(0) != static_cast<int64_t>(sampleIds.size()))
        throw Error("'" + key + "' has shape " + shapeToString(values.sizes().vec())
            + ", not one row per sample of the " + std::to_string(sampleIds.size())
            + "-image batch; it cannot be recorded per sample");
    const at::Tensor rows = selected.to(values.device()).nonzero().flatten();
    if (rows.numel() == 0)
        return std::nullopt;
    const at::Tensor ids = at::tensor(sampleIds, at::kLong).to(values.device()).index_select(0, rows);
    return std::make_pair(values.index_select(0, rows), ids);
}

} // namespace

struct Recorder::Layer {
    int64_t samples = 0;
    std::vector<int64_t> sampleShape;
    std::vector<at::Tensor> kept; // Reduction::None, on the CPU
    std::vector<at::Tensor> keptIds; // their samples
    at::Tensor accumulated; // Sum, Mean (float64), Max, Min
    // Reduction::Stats: per-channel totals (float64, on the model's device) and the top-k.
    ChannelPass totals;
    at::Tensor topValues, topSamples;
    double low = 0.0, high = 0.0;
    bool rangeChosen = false;
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

Recorder::Layer& Recorder::layerFor(const std::string& key, const std::vector<int64_t>& sampleShape)
{
    auto& slot = layers_[key];
    if (!slot) {
        slot = std::make_unique<Layer>();
        slot->sampleShape = sampleShape;
        order_.push_back(key);
    }
    if (sampleShape != slot->sampleShape)
        throw Error("'" + key + "' changed shape between batches (" + shapeToString(slot->sampleShape) + " then "
            + shapeToString(sampleShape) + "); use a preprocessing with a fixed size");
    return *slot;
}

void Recorder::add(const RunResult& result, const std::vector<int64_t>& sampleIds, const at::Tensor& selected)
{
    for (const auto& [key, value] : result.values) {
        const auto rows = selectedRows(key, value, sampleIds, selected);
        if (!rows)
            continue;
        const at::Tensor& values = rows->first;
        const at::Tensor& ids = rows->second;
        Layer& layer = layerFor(key, std::vector<int64_t>(values.sizes().begin() + 1, values.sizes().end()));

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
            layer.keptIds.push_back(ids.cpu());
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
            if (!layer.totals.count.defined() && !layer.rangeChosen) {
                if (const auto fixed = fixedRanges_.find(key); fixed != fixedRanges_.end())
                    std::tie(layer.low, layer.high) = fixed->second;
                else if (config_.histogramRange)
                    std::tie(layer.low, layer.high) = *config_.histogramRange;
                else
                    std::tie(layer.low, layer.high) = rangeOfFirstBatch(values);
                layer.rangeChosen = true;
            }
            addStats(layer, values, ids);
            break;
        }
        layer.samples += values.size(0);
    }
}

std::map<std::string, std::pair<double, double>> Recorder::histogramRangeCandidates(
    const RunResult& result, const at::Tensor& selected) const
{
    std::map<std::string, std::pair<double, double>> candidates;
    if (config_.reduction != Reduction::Stats || config_.histogramRange)
        return candidates;
    const auto n = static_cast<int64_t>(selected.size(0));
    std::vector<int64_t> positions(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
        positions[static_cast<size_t>(i)] = i;
    for (const auto& [key, value] : result.values) {
        if (layers_.count(key) || fixedRanges_.count(key))
            continue;
        if (const auto rows = selectedRows(key, value, positions, selected))
            candidates[key] = rangeOfFirstBatch(rows->first);
    }
    return candidates;
}

void Recorder::fixHistogramRange(const std::string& key, double low, double high)
{
    fixedRanges_[key] = {low, high};
}

void Recorder::addStats(Layer& layer, const at::Tensor& values, const at::Tensor& ids)
{
    const ChannelPass batch = channelPass(values, config_.histogramBins, layer.low, layer.high);
    mergeInto(layer.totals, batch);

    // Top-k samples per channel by their mean activation (the deep-visualization-toolbox view).
    const at::Tensor sampleIds = ids.to(batch.perSample.device()).unsqueeze(1).expand_as(batch.perSample);
    at::Tensor candidates = batch.perSample, candidateIds = sampleIds;
    if (layer.topValues.defined()) {
        candidates = at::cat({layer.topValues, batch.perSample});
        candidateIds = at::cat({layer.topSamples, sampleIds});
    }
    std::tie(layer.topValues, layer.topSamples)
        = topPerChannel(candidates, candidateIds, std::min<int64_t>(config_.topK, candidates.size(0)));
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

namespace {

c10::IValue orNone(const at::Tensor& tensor)
{
    return tensor.defined() ? c10::IValue(tensor.cpu()) : c10::IValue();
}

at::Tensor tensorOrUndefined(const c10::IValue& value)
{
    return value.isTensor() ? value.toTensor() : at::Tensor();
}

} // namespace

std::string Recorder::serialized() const
{
    c10::impl::GenericList layers(c10::AnyType::get());
    for (const auto& key : order_) {
        const Layer& l = *layers_.at(key);
        const ChannelPass& t = l.totals;
        std::vector<c10::IValue> fields{key, l.samples, l.sampleShape,
            orNone(l.kept.empty() ? at::Tensor() : at::cat(l.kept)),
            orNone(l.keptIds.empty() ? at::Tensor() : at::cat(l.keptIds)), orNone(l.accumulated), orNone(t.count),
            orNone(t.mean), orNone(t.m2), orNone(t.minimum), orNone(t.maximum), orNone(t.zeros), orNone(t.histogram),
            t.below, t.above, orNone(l.topValues), orNone(l.topSamples), l.low, l.high, l.rangeChosen};
        layers.push_back(c10::ivalue::Tuple::create(std::move(fields)));
    }
    const std::vector<char> bytes = torch::jit::pickle_save(
        c10::ivalue::Tuple::create({static_cast<int64_t>(config_.reduction), c10::IValue(layers)}));
    return std::string(bytes.begin(), bytes.end());
}

void Recorder::merge(const std::string& serialized)
{
    c10::IValue saved;
    try {
        saved = torch::jit::pickle_load(std::vector<char>(serialized.begin(), serialized.end()));
    } catch (const c10::Error& e) {
        throw Error("a recording to merge could not be read: " + torchErrorMessage(e.what_without_backtrace()));
    }
    const auto& top = saved.toTupleRef().elements();
    if (top.at(0).toInt() != static_cast<int64_t>(config_.reduction))
        throw Error("a recording to merge used another reduction");
    for (const c10::IValue& entry : top.at(1).toListRef()) {
        const auto& f = entry.toTupleRef().elements();
        const std::string key = f.at(0).toStringRef();
        Layer other;
        other.samples = f.at(1).toInt();
        other.sampleShape = f.at(2).toIntVector();
        if (f.at(3).isTensor()) {
            other.kept.push_back(f.at(3).toTensor());
            other.keptIds.push_back(f.at(4).toTensor());
        }
        other.accumulated = tensorOrUndefined(f.at(5));
        ChannelPass& t = other.totals;
        t.count = tensorOrUndefined(f.at(6));
        t.mean = tensorOrUndefined(f.at(7));
        t.m2 = tensorOrUndefined(f.at(8));
        t.minimum = tensorOrUndefined(f.at(9));
        t.maximum = tensorOrUndefined(f.at(10));
        t.zeros = tensorOrUndefined(f.at(11));
        t.histogram = tensorOrUndefined(f.at(12));
        t.below = f.at(13).toInt();
        t.above = f.at(14).toInt();
        other.topValues = tensorOrUndefined(f.at(15));
        other.topSamples = tensorOrUndefined(f.at(16));
        other.low = f.at(17).toDouble();
        other.high = f.at(18).toDouble();
        other.rangeChosen = f.at(19).toBool();
        if (!other.kept.empty()) {
            // The merged samples count against the cap as they would in one process.
            keptBytes_ += other.kept.front().numel() * static_cast<int64_t>(other.kept.front().element_size());
            if (keptBytes_ > config_.memoryCapBytes)
                throw Error("the merged samples pass the memory cap of " + std::to_string(config_.memoryCapBytes >> 20)
                    + " MiB at '" + key + "'; use a reduction (sum, mean, max, min, stats) or raise the cap");
        }
        if (!layers_.count(key)) {
            layers_[key] = std::make_unique<Layer>(std::move(other));
            order_.push_back(key);
            continue;
        }
        mergeLayer(key, *layers_.at(key), std::move(other));
    }
}

void Recorder::mergeLayer(const std::string& key, Layer& into, Layer&& other)
{
    if (other.sampleShape != into.sampleShape)
        throw Error("'" + key + "' has shape " + shapeToString(into.sampleShape) + " here and "
            + shapeToString(other.sampleShape) + " in the recording to merge");
    switch (config_.reduction) {
    case Reduction::None: {
        // In sample order, as one process keeps them.
        const at::Tensor ids = at::cat({at::cat(into.keptIds), at::cat(other.keptIds)});
        const at::Tensor order = std::get<1>(at::sort(ids, /*stable=*/true, /*dim=*/0, /*descending=*/false));
        const at::Tensor rows = at::cat({at::cat(into.kept), at::cat(other.kept)}).index_select(0, order);
        into.kept = {rows};
        into.keptIds = {ids.index_select(0, order)};
        break;
    }
    case Reduction::Sum:
    case Reduction::Mean:
        into.accumulated = into.accumulated + other.accumulated.to(into.accumulated.device());
        break;
    case Reduction::Max:
        into.accumulated = at::maximum(into.accumulated, other.accumulated.to(into.accumulated.device()));
        break;
    case Reduction::Min:
        into.accumulated = at::minimum(into.accumulated, other.accumulated.to(into.accumulated.device()));
        break;
    case Reduction::Stats: {
        if (other.low != into.low || other.high != into.high)
            throw Error("'" + key + "' has the histogram range [" + std::to_string(into.low) + ", "
                + std::to_string(into.high) + "] here and [" + std::to_string(other.low) + ", "
                + std::to_string(other.high) + "] in the recording to merge: the counts cannot be added");
        const c10::Device device = into.totals.count.device();
        ChannelPass moved = other.totals;
        for (at::Tensor* t :
            {&moved.count, &moved.mean, &moved.m2, &moved.minimum, &moved.maximum, &moved.zeros, &moved.histogram})
            if (t->defined())
                *t = t->to(device);
        mergeInto(into.totals, moved);
        const at::Tensor values = at::cat({into.topValues, other.topValues.to(device)});
        const at::Tensor ids = at::cat({into.topSamples, other.topSamples.to(device)});
        std::tie(into.topValues, into.topSamples)
            = topPerChannel(values, ids, std::min<int64_t>(config_.topK, values.size(0)));
        break;
    }
    }
    into.samples += other.samples;
}

} // namespace torchscope
