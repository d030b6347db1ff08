#include "probe/layer_sweep.h"

#include "common/error.h"

#include <sstream>

namespace torchscope {

LayerSweepResult sweepLayers(const ProbeDataset& dataset, const std::vector<std::string>& layers,
    const ProbeTrainingConfig& config, const ProgressCallback& progress)
{
    LayerSweepResult sweep;
    for (size_t i = 0; i < layers.size(); ++i) {
        const auto it = dataset.features.find(layers[i]);
        if (it == dataset.features.end())
            throw Error("no features were collected for '" + layers[i] + "'");
        bool stop = false;
        LayerProbeResult result;
        result.layer = layers[i];
        result.features = it->second.size(1);
        result.probe = trainLinearProbe(it->second, dataset.labels, config, [&](const Progress& epoch) {
            stop = progress
                && !progress(Progress{static_cast<int64_t>(i), static_cast<int64_t>(layers.size()), layers[i],
                    {static_cast<double>(epoch.done - 1), epoch.values.front()}});
            return !stop;
        });
        if (stop) {
            sweep.cancelled = true;
            break;
        }
        sweep.layers.push_back(std::move(result));
        const auto& mine = sweep.layers.back().probe;
        if (sweep.best < 0)
            sweep.best = 0;
        const auto& best = sweep.layers[static_cast<size_t>(sweep.best)].probe;
        const double myLoss = mine.validationLoss[static_cast<size_t>(mine.bestEpoch)];
        const double bestLoss = best.validationLoss[static_cast<size_t>(best.bestEpoch)];
        if (mine.validationAccuracy > best.validationAccuracy
            || (mine.validationAccuracy == best.validationAccuracy && myLoss < bestLoss))
            sweep.best = static_cast<int>(sweep.layers.size() - 1);
    }
    return sweep;
}

std::string sweepCsv(const LayerSweepResult& sweep)
{
    std::ostringstream out;
    out << "path,features,train_accuracy,validation_accuracy,best_epoch\n";
    for (const auto& l : sweep.layers)
        out << l.layer << ',' << l.features << ',' << l.probe.trainAccuracy << ',' << l.probe.validationAccuracy << ','
            << l.probe.bestEpoch << '\n';
    return out.str();
}

} // namespace torchscope
