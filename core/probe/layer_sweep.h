#pragma once

#include "common/progress.h"
#include "probe/probe_dataset.h"
#include "probe/probe_training.h"

#include <functional>
#include <string>
#include <vector>

namespace torchscope {

struct LayerProbeResult {
    std::string layer;
    int64_t features = 0;
    ProbeTrainingResult probe;
};

struct LayerSweepResult {
    std::vector<LayerProbeResult> layers; // in the order asked
    int best = -1; // highest validation accuracy (the lower validation loss breaks ties)
    bool cancelled = false;
};

// hybrid_learning's concept analysis: the same probe trained on every layer of the dataset, with
// the same split and seed, so the accuracies are comparable. progress after each
// epoch (layers done of all, stage = the layer, values = {epoch, validation loss}) returning false
// cancels, keeping the layers finished so far.
LayerSweepResult sweepLayers(const ProbeDataset& dataset, const std::vector<std::string>& layers,
    const ProbeTrainingConfig& config = {}, const ProgressCallback& progress = {});

// "path,features,train_accuracy,validation_accuracy,best_epoch" and one line per layer.
std::string sweepCsv(const LayerSweepResult& sweep);

} // namespace torchscope
