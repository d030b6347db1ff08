#include "record/folder_run.h"

#include "imaging/batch_reader.h"

#include <memory>

namespace torchscope {

FolderRunResult recordFolder(Engine& engine, Recorder& recorder, const ImageFolder& folder,
    const Preprocessing& preprocessing, const FolderRunOptions& options, const ProgressCallback& progress)
{
    return recordBatches(engine, recorder, folderBatches(folder, preprocessing, options), progress);
}

BatchStream folderBatches(
    const ImageFolder& folder, const Preprocessing& preprocessing, const FolderRunOptions& options)
{
    auto reader = std::make_shared<BatchReader>(
        folder, preprocessing, options.batchSize, options.decodeThreads, 3, options.shard);
    BatchStream stream;
    stream.total = static_cast<int64_t>(folder.images.size());
    stream.next = [reader] { return reader->next(); };
    stream.stop = [reader] { reader->cancel(); };
    return stream;
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
