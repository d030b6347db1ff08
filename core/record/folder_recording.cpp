#include "record/folder_recording.h"

#include "common/error.h"
#include "graph/engine.h"
#include "imaging/image_folder.h"
#include "record/folder_run.h"
#include "record/recorder.h"
#include "record/recording_files.h"

namespace torchscope {

RecordResult RecordAnalysis::run(AnalysisContext& context, const Request& request)
{
    RecorderConfig config;
    config.grabs = request.grabs;
    config.reduction = parseReduction(request.reduction);
    config.condition = Condition::parse(request.condition);
    config.targetClass = request.targetClass;
    config.scores = request.setup.scores;
    config.edits = request.edits;
    const ImageFolder folder = ImageFolder::scan(request.folder, request.setup.labels);
    auto recorder = std::make_shared<Recorder>(config);
    FolderRunOptions options;
    options.batchSize = request.batchSize;
    options.decodeThreads = 2;
    const FolderRunResult run = recordFolder(*context.models.engine(context.model), *recorder, folder,
        request.setup.preprocessing, options, [&](const Progress& p) {
            return context.reportProgress({p.done, p.total, {}, {}});
        });
    RecordResult result;
    result.cancelled = run.cancelled;
    result.images = run.images;
    result.selected = run.selected;
    result.seconds = run.seconds;
    result.imagesPerSecond = run.imagesPerSecond;
    result.labelSource = folder.labelSource;
    for (const auto& edit : request.edits)
        result.edits.push_back(edit.toString());
    for (const auto& image : folder.images)
        result.imagePaths.push_back(image.path);
    for (const auto& grabbed : recorder->keys())
        result.samples[grabbed] = recorder->samples(grabbed);
    result.statistics = recorder->statistics();
    result.topSamples = recorder->topSamples();
    result.failures = run.failures;
    RecordingSource source = recordingSource(folder);
    source.model = context.model.path;
    source.condition = request.condition;
    result.summary = recordingSummary(*recorder, run, source);
    result.manifest = request.manifest;
    for (const auto& file : source.imageFiles)
        result.manifest.images.push_back({file});
    result.manifest.settings
        = {{"folder", request.folder}, {"reduce", request.reduction}, {"condition", request.condition}};
    result.recorder = std::move(recorder);
    return result;
}

std::vector<std::string> writeRecordResult(const std::string& path, const RecordResult& result)
{
    if (!result.recorder)
        throw Error("nothing has been recorded yet: start a folder run in the Recorders panel");
    return writeRecording(path, *result.recorder, result.summary, &result.manifest);
}

} // namespace torchscope
