#pragma once

#include "export/write_tensors.h"
#include "record/layer_statistics.h"
#include "record/recorder_config.h"

#include <ATen/core/Tensor.h>

#include <map>
#include <string>
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

    // Everything recorded, for export (see README for the keys).
    NamedValues results() const;
    // Per-channel statistics of Reduction::Stats, as plain values.
    std::map<std::string, LayerStatistics> statistics() const;
    // For Reduction::Stats: per key, per channel, the top-k samples (highest mean activation first).
    std::map<std::string, std::vector<std::vector<TopSample>>> topSamples() const;
    // One line per layer and channel: layer,channel,samples,mean,std,min,max,zero_fraction.
    std::string channelCsv() const;

private:
    struct Layer;
    void addStats(Layer& layer, const at::Tensor& values, const at::Tensor& ids);

    RecorderConfig config_;
    std::vector<std::string> order_;
    std::map<std::string, std::unique_ptr<Layer>> layers_;
    int64_t keptBytes_ = 0;
};

} // namespace torchscope
