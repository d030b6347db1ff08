#pragma once

// What the probe tools send to the run worker and get back: plain values, no Torch, no Qt.

#include "common/float_tensor.h"
#include "imaging/attention_workbench.h"
#include "imaging/attribution_workbench.h"
#include "imaging/grad_cam_images.h"
#include "imaging/patch_images.h"
#include "jobs/run_types.h"
#include "model/model_setup.h"

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

struct ProbeJobResult {
    std::vector<std::string> classNames;
    int64_t samples = 0;
    std::vector<ProbeLayerResult> layers;
    int best = -1;
    bool cancelled = false;
    std::vector<std::string> cachedLayers;
    std::vector<std::pair<std::string, std::string>> failures;
};
using ProbeJobResultPtr = std::shared_ptr<const ProbeJobResult>;

// A probe file applied to the window's images.
struct ProbeScores {
    std::string file;
    std::string layer;
    std::vector<std::string> classNames;
    std::vector<std::string> images;
    std::vector<std::vector<double>> probabilities; // per image, per class
};
using ProbeScoresPtr = std::shared_ptr<const ProbeScores>;

// Grad-CAM and patching are core operations (imaging/grad_cam_images.h, imaging/patch_images.h):
// their results travel as they are.
using GradCamResultPtr = std::shared_ptr<const GradCamResult>;
using PatchResultPtr = std::shared_ptr<const PatchResult>;
using AttributionWorkbenchResultPtr = std::shared_ptr<const AttributionWorkbenchResult>;
using AttentionWorkbenchResultPtr = std::shared_ptr<const AttentionWorkbenchResult>;

} // namespace torchscope
