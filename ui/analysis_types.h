#pragma once

// What the probe, Grad-CAM and patching tools send to the run worker and get back: plain values,
// no Torch, no Qt.

#include "compare/input_difference.h"
#include "common/float_tensor.h"
#include "model/model_setup.h"
#include "run_types.h"

#include <memory>
#include <string>
#include <vector>

namespace torchscope {

// Probes trained on an ImageFolder (one subfolder per class): one layer, or a sweep of several.
struct ProbeRequest {
    std::string folder;
    std::vector<std::string> layers;
    std::string pooling = "avg";
    int64_t seed = 0;
    double validationFraction = 0.25;
    ModelSetup setup;
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
};

struct ProbeSnapshot {
    std::vector<std::string> classNames;
    int64_t samples = 0;
    std::vector<ProbeLayerResult> layers;
    int best = -1;
    bool cancelled = false;
    std::vector<std::string> cachedLayers;
    std::vector<std::pair<std::string, std::string>> failures;
};
using ProbeSnapshotPtr = std::shared_ptr<const ProbeSnapshot>;

// A probe file applied to the window's images.
struct ProbeScores {
    std::string file;
    std::string layer;
    std::vector<std::string> classNames;
    std::vector<std::string> images;
    std::vector<std::vector<double>> probabilities; // per image, per class
};
using ProbeScoresPtr = std::shared_ptr<const ProbeScores>;

struct AttributionRequest {
    std::string image;
    std::string layer;
    int64_t targetClass = -1; // -1: the predicted class (or the top detection)
    std::vector<int64_t> region; // segmentation: x0, y0, x1, y1 in model-input pixels; empty: none
    ModelSetup setup;
};

struct AttributionSnapshot {
    std::string image;
    std::string layer;
    int64_t target = 0;
    std::string targetDescription; // "class 15 (person) summed over its 2,304 pixels"
    OutputKind outputKind = OutputKind::Other;
    FloatTensor picture; // [H, W, 3] in [0, 1]: the input as decoded
    FloatTensor gradCam; // [H, W] in [0, 1], at the model input's size
    FloatTensor saliency; // [H, W] in [0, 1]
    // The values that 0 and 1 of the maps above stand for (their colour bars).
    std::pair<double, double> gradCamRange;
    std::pair<double, double> saliencyRange;
    std::string gradCamNote; // why Grad-CAM is empty, when that is known
};
using AttributionSnapshotPtr = std::shared_ptr<const AttributionSnapshot>;

// Activation patching (B's layer output into A's run) or ablation (channels of the layer zeroed).
struct PatchRequest {
    std::string imageA;
    std::string imageB; // unused for ablation
    std::string layer;
    bool ablate = false;
    bool difference = false; // compare A and B at `layer`: A, B and A - B, channels ranked
    std::vector<int64_t> channels;
    std::string compareLayer; // a later layer whose maps are shown side by side ("" : none)
    ModelSetup setup;
};

struct PatchColumn {
    std::string title;
    std::vector<Prediction> predictions;
    FloatTensor picture; // [H, W, 3]
    FloatTensor map; // [h, w]: compareLayer's mean over channels, in [0, 1] over all columns
};

struct PatchSnapshot {
    std::string layer;
    std::string compareLayer;
    std::vector<PatchColumn> columns; // A, B (patching only), patched / ablated
    std::shared_ptr<const InputDifference> difference; // the difference mode's maps at `layer`
};
using PatchSnapshotPtr = std::shared_ptr<const PatchSnapshot>;

} // namespace torchscope
