#pragma once

// The open model's run on the interactive lane (see workbench_jobs.h). Includes Torch: for the
// jobs' translation units only.

#include "export/manifest.h"
#include "graph/analysis_context.h"
#include "run/image_run.h"

#include <memory>

namespace torchscope {

struct WorkbenchState {
    ModelKey key;
    std::shared_ptr<Model> model;
    std::shared_ptr<Engine> engine; // the runner's: kept here, the cache may let it go
    std::unique_ptr<ImageRunner> runner;
    ExportManifest runManifest; // what the last run's tensors are, for their export
};

} // namespace torchscope
