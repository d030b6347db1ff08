#pragma once

// What the window's jobs do, on a lane's thread: the bodies RunController submits to the
// JobRunner, each a thin call of a core operation. Torch lives only in the .cpp files.

#include "jobs/compare_types.h"
#include "jobs/model_cache.h"
#include "jobs/run_metatypes.h"
#include "jobs/visualize_types.h"

#include <QStringList>

#include <memory>

namespace torchscope {

class JobContext;

// The window's state that lives on the lanes: the last run (interactive lane), the last
// recording and the trained probes (batch lane). Defined in workbench_jobs.cpp.
struct WorkbenchState;
std::shared_ptr<WorkbenchState> makeWorkbenchState();

namespace jobs {

// Interactive lane.
ModelSummary openModel(JobContext& job, WorkbenchState& state, const ModelKey& key);
RunJobResultPtr runImages(JobContext& job, WorkbenchState& state, const RunRequest& request,
    const std::function<void(const ImageResult&)>& onImage = {});
QStringList exportTensors(WorkbenchState& state, const QString& path);
SetupAdvice adviseSetup(JobContext& job, const ModelKey& key, const ModelSetup& current);
void saveSetupIntoModel(const ModelKey& key, const QString& path, const ModelSetup& setup);
GradCamResultPtr gradCam(JobContext& job, const ModelKey& key, const GradCamRequest& request);
PatchResultPtr patch(JobContext& job, const ModelKey& key, const PatchRequest& request);
ProbeScoresPtr applyProbeFile(
    JobContext& job, const ModelKey& key, const QString& path, const QStringList& images, const ModelSetup& setup);

// Batch lane.
RecordJobResultPtr record(JobContext& job, WorkbenchState& state, const ModelKey& key, const RecordRequest& request);
QStringList exportRecording(WorkbenchState& state, const QString& path);
ProbeJobResultPtr trainProbes(JobContext& job, WorkbenchState& state, const ModelKey& key, const ProbeRequest& request);
void exportProbe(WorkbenchState& state, const QString& layer, const QString& path, bool stateDict);
CompareResultPtr compare(JobContext& job, const CompareRequest& request);
LayerPairResult layerPairMaps(JobContext& job, const CompareRequest& request, const std::string& image,
    const std::string& layerA, const std::string& layerB);
VisualizeJobResult visualize(JobContext& job, const VisualizeRequest& request);
AttributionWorkbenchResultPtr attributionWorkbench(
    JobContext& job, const ModelKey& key, const AttributionWorkbenchRequest& request);
AttentionWorkbenchResultPtr attentionWorkbench(
    JobContext& job, const ModelKey& key, const AttentionWorkbenchRequest& request);

} // namespace jobs
} // namespace torchscope
