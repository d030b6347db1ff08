#pragma once

// The run worker's state, shared by its two translation units (runs and recordings in
// run_worker.cpp, probes, Grad-CAM and patching in analysis_worker.cpp). Includes Torch.

#include "graph/engine.h"
#include "imaging/image_decoder.h"
#include "model/model.h"
#include "probe/linear_probe.h"
#include "record/recorder.h"
#include "run_worker.h"

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace torchscope {

class ActivationCache;

struct RunWorker::State {
    std::shared_ptr<Model> model;
    std::unique_ptr<Engine> engine;
    ModelSummary summary;
    bool dryRunDone = false;
    std::string cutAwayFor; // the truncation point cutAway was found for
    std::vector<std::string> cutAway;
    std::vector<std::pair<std::string, std::vector<at::Tensor>>> recorded; // last run, per key, per image
    std::unique_ptr<Recorder> recording; // the last folder recording, for export
    std::string recordingSummary; // its summary JSON (image files in sample order), exported beside it
    std::map<std::string, LinearProbe> probes; // the last trained probe per layer, for export
    std::shared_ptr<ActivationCache> activationCache; // across trainings of this model
};

// The decoded image as [H, W, 3] in [0, 1], for overlays.
FloatTensor rgbPicture(const DecodedImage& image);
// The first image's reading of a model output by the setup (its scores element and labels).
ImagePrediction predictionOf(const c10::IValue& output, const ModelSetup& setup, int k);
// A run failure that points at the input setup (wrong size or channels), with what to do; "" if not.
std::string explainRunFailure(const std::string& message, const at::Tensor& input, const ModelSetup& setup);

} // namespace torchscope
