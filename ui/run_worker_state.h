#pragma once

// The run worker's state, shared by its two translation units (runs and recordings in
// run_worker.cpp, probes, Grad-CAM and patching in run_worker_analyses.cpp). Includes Torch.

#include "graph/engine.h"
#include "imaging/image_run.h"
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
    std::unique_ptr<ImageRunner> runner; // the per-image run on engine, with the last run's tensors
    std::unique_ptr<Recorder> recording; // the last folder recording, for export
    std::string recordingSummary; // its summary JSON (image files in sample order), exported beside it
    std::map<std::string, LinearProbe> probes; // the last trained probe per layer, for export
    std::shared_ptr<ActivationCache> activationCache; // across trainings of this model
};

} // namespace torchscope
