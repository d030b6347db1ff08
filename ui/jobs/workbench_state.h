#pragma once

// The window's state on the job lanes (see workbench_jobs.h). Includes Torch: for the jobs'
// translation units only.

#include "export/manifest.h"
#include "imaging/image_run.h"
#include "jobs/model_cache.h"
#include "probe/linear_probe.h"
#include "record/recorder.h"

#include <map>
#include <memory>
#include <string>

namespace torchscope {

class ActivationCache;

struct WorkbenchState {
    // Interactive lane: the open model's per-image run, with the last run's tensors.
    ModelKey key;
    std::shared_ptr<Model> model;
    std::shared_ptr<Engine> engine; // the runner's: kept here, the cache may let it go
    std::unique_ptr<ImageRunner> runner;
    ExportManifest runManifest; // what the last run's tensors are, for their export
    // Batch lane: the last folder recording with its summary JSON, the last probe per layer, and
    // the activations cached across trainings.
    std::unique_ptr<Recorder> recording;
    std::string recordingSummary;
    ExportManifest recordingManifest;
    std::map<std::string, LinearProbe> probes;
    std::shared_ptr<ActivationCache> activationCache;
};

} // namespace torchscope
