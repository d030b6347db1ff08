#include "imaging/folder_run.h"

#include "imaging/batch_reader.h"

namespace torchscope {

FolderRunSummary recordFolder(Engine& engine, Recorder& recorder, const ImageFolder& folder,
    const Preprocessing& preprocessing, const FolderRunOptions& options,
    const std::function<bool(const FolderRunProgress&)>& progress)
{
    BatchReader reader(folder, preprocessing, options.batchSize, options.decodeThreads);
    return recordBatches(
        engine, recorder, static_cast<int64_t>(folder.images.size()), [&] { return reader.next(); }, progress,
        [&] { reader.cancel(); });
}

RecordingSource recordingSource(const ImageFolder& folder)
{
    RecordingSource source;
    source.classes = folder.classes;
    source.classLabels = folder.classLabels;
    source.labelSource = folder.labelSource;
    for (const auto& image : folder.images)
        source.imageFiles.push_back(image.path);
    return source;
}

} // namespace torchscope
