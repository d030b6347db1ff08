#pragma once

#include "export/write_tensors.h"
#include "record/layer_statistics.h"
#include "record/recorder_config.h"

#include <ATen/core/Tensor.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace torchscope {

struct RunResult;

// Folds the grabbed values of many batches (torchfunc's recorders, with reductions that run on
// the model's device): only the running state is kept, never whole activations, except for
// Reduction::None, which keeps every sample up to a memory cap. Sample counts are per key.
class Recorder {
public:
    explicit Recorder(RecorderConfig config);
    ~Recorder();

    const RecorderConfig& config() const { return config_; }

    // One batch's run. `sampleIds` are the samples' positions in the dataset; `selected` marks
    // those that satisfy the condition (bool [N] on any device).
    void add(const RunResult& result, const std::vector<int64_t>& sampleIds, const at::Tensor& selected);

    std::vector<std::string> keys() const { return order_; }
    int64_t samples(const std::string& key) const;

    // Everything recorded, for export (docs/recording.md lists the keys).
    NamedValues results() const;
    // Per-channel statistics of Reduction::Stats, as plain values.
    std::map<std::string, LayerStatistics> statistics() const;
    // For Reduction::Stats: per key, per channel, the top-k samples (highest mean activation first).
    std::map<std::string, std::vector<std::vector<TopSample>>> topSamples() const;
    // One line per layer and channel: layer,channel,samples,mean,std,min,max,zero_fraction.
    std::string channelCsv() const;

    // For a recording split over processes (distributed/): a Stats key takes its histogram range
    // from the first batch it sees, so ranks agree on the range of the earliest batch, as one
    // process would have taken it. The ranges keys not seen yet would take from this batch:
    std::map<std::string, std::pair<double, double>> histogramRangeCandidates(
        const RunResult& result, const at::Tensor& selected) const;
    // The range a key takes when it first comes (agreed between ranks).
    void fixHistogramRange(const std::string& key, double low, double high);

    // Everything recorded so far, as bytes that another process's recorder can merge.
    std::string serialized() const;
    // Folds in a serialized() recorder of the same config, as if its samples had been added
    // here: sums, Chan's merge of the statistics, top-k (ties to the lower sample), kept samples
    // in sample order. Throws torchscope::Error when the two do not fit together.
    void merge(const std::string& serialized);

private:
    struct Layer;
    Layer& layerFor(const std::string& key, const std::vector<int64_t>& sampleShape);
    void addStats(Layer& layer, const at::Tensor& values, const at::Tensor& ids);
    void mergeLayer(const std::string& key, Layer& into, Layer&& other);

    RecorderConfig config_;
    std::vector<std::string> order_;
    std::map<std::string, std::unique_ptr<Layer>> layers_;
    std::map<std::string, std::pair<double, double>> fixedRanges_;
    int64_t keptBytes_ = 0;
};

} // namespace torchscope
