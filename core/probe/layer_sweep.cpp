#include "probe/layer_sweep.h"

#include "common/error.h"

#include <sstream>

namespace torchscope {

LayerSweep sweepLayers(const ProbeDataset& dataset, const std::vector<std::string>& layers,
    const ProbeTrainingConfig& config, const std::function<bool(int, int)>& progress)
{
    LayerSweep sweep;
    for (size_t i = 0; i < layers.size(); ++i) {
        const auto it = dataset.features.find(layers[i]);
        if (it == dataset.features.end())
            throw Error("no features were collected for '" + layers[i] + "'");
        bool stop = false;
        LayerProbeResult result;
        result.layer = layers[i];
        result.features = it->second.size(1);
        result.probe = trainLinearProbe(it->second, dataset.labels, config, [&](int epoch, double) {
            stop = progress && !progress(static_cast<int>(i), epoch);
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

std::string sweepCsv(const LayerSweep& sweep)
{
    std::ostringstream out;
    out << "path,features,train_accuracy,validation_accuracy,best_epoch\n";
    for (const auto& l : sweep.layers)
        out << l.layer << ',' << l.features << ',' << l.probe.trainAccuracy << ',' << l.probe.validationAccuracy << ','
            << l.probe.bestEpoch << '\n';
    return out.str();
}

} // namespace torchscope
