#pragma once

// The controller's own work on the interactive lane: opening the model and running the Document's
// images with it (the per-image run, core/run/image_run.h), and writing that run's tensors. Every
// other job is an analysis of core's (graph/analysis_context.h). Torch lives only in the .cpp file.

#include "export/manifest.h"
#include "jobs/run_metatypes.h"

#include <QStringList>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace torchscope {

class JobContext;
struct ModelKey;

// The state of the open model's run on the interactive lane. Defined in workbench_state.h.
struct WorkbenchState;
std::shared_ptr<WorkbenchState> makeWorkbenchState();

namespace jobs {

ModelSummary openModel(JobContext& job, WorkbenchState& state, const ModelKey& key);
RunJobResultPtr runImages(JobContext& job, WorkbenchState& state, const RunRequest& request,
    const std::function<void(const ImageResult&)>& onImage = {});
QStringList exportTensors(WorkbenchState& state, const QString& path);

} // namespace jobs

// The window's exports name what they hold as the CLI's do (export/manifest.h).
ExportManifest windowManifest(const std::string& what, const ModelKey& key, const ModelSetup& setup,
    const std::vector<EditSpec>& edits, const std::optional<std::string>& truncation);

} // namespace torchscope
