#pragma once

// Probes as the Probes tab trains and applies them: linear probes on one or more layers, trained
// on an image folder with one subfolder per class (probe/layer_sweep.h), kept whole for their
// export; and a saved probe applied to some images. No Torch in this header.

#include "graph/analysis_context.h"
#include "model/model_setup.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace torchscope {

class ActivationCache;
struct LinearProbe;

// The activations collected for probes, kept across trainings: in memory and, when `folder` is
// not empty, on disk there.
std::shared_ptr<ActivationCache> makeActivationCache(const std::string& folder);

struct ProbeRequest {
    std::string folder;
    std::vector<std::string> layers;
    std::string pooling = "avg";
    int64_t seed = 0;
    double validationFraction = 0.25;
    ModelSetup setup;
    std::shared_ptr<ActivationCache> cache; // may be null: nothing is kept
};

struct ProbeLayerResult {
    std::string layer;
    int64_t features = 0;
    double trainAccuracy = 0.0;
    double validationAccuracy = 0.0;
    int bestEpoch = 0;
    std::vector<double> trainLoss;
    std::vector<double> validationLoss;
    std::vector<std::vector<int64_t>> confusion; // validation: [true][predicted]
    std::shared_ptr<const LinearProbe> probe; // for its export (saveTrainedProbe)
};

struct ProbeResult {
    std::vector<std::string> classNames;
    int64_t samples = 0;
    std::vector<ProbeLayerResult> layers;
    int best = -1;
    bool cancelled = false;
    std::vector<std::string> cachedLayers;
    std::vector<std::pair<std::string, std::string>> failures;
};

// The analysis "probe": activations collected (stage "activations", counting images), then a
// probe trained per layer (stage "training", counting layers).
struct ProbeAnalysis {
    using Request = ProbeRequest;
    using Result = ProbeResult;
    static constexpr const char* name = "probe";
    static Result run(AnalysisContext& context, const Request& request);
};

// Saves the probe trained on `layer` as a TorchScript module, or its state_dict (as `probe train`
// does). Throws torchscope::Error when no probe of that layer is in the result.
void saveTrainedProbe(const ProbeResult& result, const std::string& layer, const std::string& path, bool stateDict);

// A saved probe's class probabilities for each of some images.
struct ProbeScoresRequest {
    std::string file; // FILE.pt as `probe train` or the Probes tab saves it
    std::vector<std::string> images;
    ModelSetup setup;
};

struct ProbeScores {
    std::string file;
    std::string layer;
    std::vector<std::string> classNames;
    std::vector<std::string> images;
    std::vector<std::vector<double>> probabilities; // per image, per class
};

// The analysis "probe-scores": the model runs only up to the probe's layer.
struct ProbeScoresAnalysis {
    using Request = ProbeScoresRequest;
    using Result = ProbeScores;
    static constexpr const char* name = "probe-scores";
    static Result run(AnalysisContext& context, const Request& request);
};

} // namespace torchscope
