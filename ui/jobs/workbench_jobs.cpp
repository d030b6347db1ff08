// The controller's own work: the open model and the run of the Document's images.
#include "jobs/workbench_jobs.h"

#include "common/error.h"
#include "graph/engine.h"
#include "jobs/job_runner.h"
#include "jobs/model_cache.h"
#include "jobs/workbench_state.h"
#include "model/model.h"
#include "model/model_setup.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <thread>

namespace torchscope {

std::shared_ptr<WorkbenchState> makeWorkbenchState()
{
    return std::make_shared<WorkbenchState>();
}

namespace jobs {
namespace {

int coreCount()
{
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

} // namespace

ModelSummary openModel(JobContext& job, WorkbenchState& state, const ModelKey& key)
{
    at::set_num_threads(coreCount());
    job.models().forget(key.path); // opened afresh: the file may have changed since
    // Loaded before anything of the open model is let go: a file that fails leaves it working.
    const auto model = job.models().model(JobLane::Interactive, key);
    auto engine = job.models().engine(JobLane::Interactive, key);
    const auto stored = storedSetup(*model);
    ModelSummary summary;
    summary.path = model->path();
    summary.device = model->device();
    summary.signature = model->forwardSignature();
    summary.modules = model->modules();
    summary.setup = stored.value_or(ModelSetup());
    summary.hasStoredSetup = stored.has_value();
    summary.frozenNote = model->frozenNote();
    if (const auto& exported = model->exportedProgram())
        summary.exportedNote = describeExportedProgram(*exported);
    state.key = key;
    state.model = model;
    state.runner.reset();
    state.engine = std::move(engine);
    state.runner = std::make_unique<ImageRunner>(model, *state.engine);
    return summary;
}

RunJobResultPtr runImages(JobContext& job, WorkbenchState& state, const RunRequest& request,
    const std::function<void(const ImageResult&)>& onImage)
{
    auto snapshot = std::make_shared<RunJobResult>();
    snapshot->generation = request.generation;
    snapshot->requestedImages = static_cast<int>(request.images.size());
    try {
        if (!state.runner)
            throw Error("no model is open");
        static_cast<ImageRunResult&>(*snapshot) = state.runner->run(
            request, [&](const Progress& p) { return job.progress(p.done, p.total); }, onImage);
        state.runManifest = windowManifest(
            "Export Recorded Tensors", state.key, request.setup, request.request.edits, request.request.truncateAt);
        for (const auto& image : snapshot->images) {
            state.runManifest.images.push_back({image.path, image.width, image.height});
            if (!image.gradientTarget.empty())
                state.runManifest.targets.push_back(image.gradientTarget);
        }
        for (const auto& grab : request.request.grabs)
            state.runManifest.settings.emplace_back("grab", grab.selector + grab.suffix());
        if (!snapshot->setupAdvice.empty())
            snapshot->error += "\n\n" + snapshot->setupAdvice + ": set the input in Model > Input Setup…";
    } catch (const std::exception& e) {
        snapshot->error = e.what(); // the request's own problem (unknown path, several inputs)
    }
    return snapshot;
}

QStringList exportTensors(WorkbenchState& state, const QString& path)
{
    if (!state.runner || !state.runner->hasRecorded())
        throw Error("nothing has been recorded yet: open images and run the model first");
    QStringList leftOut;
    for (const auto& key : state.runner->writeRecorded(path.toStdString(), &state.runManifest))
        leftOut << QString::fromStdString(key);
    return leftOut;
}

} // namespace jobs

// The window's exports name what they hold as the CLI's do (export/manifest.h).
ExportManifest windowManifest(const std::string& what, const ModelKey& key, const ModelSetup& setup,
    const std::vector<EditSpec>& edits, const std::optional<std::string>& truncation)
{
    ExportManifest m;
    m.command = "TorchScope window: " + what;
    m.model = key.path;
    m.device = key.device;
    m.dtype = key.dtype;
    m.preprocessing = setup.preprocessing;
    m.labels = setup.labels;
    for (const auto& edit : edits)
        m.edits.push_back(edit.toString());
    m.truncation = truncation.value_or("");
    return m;
}

} // namespace torchscope
