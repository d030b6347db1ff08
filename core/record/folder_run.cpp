#include "record/folder_run.h"

#include "record/batch_reader.h"

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

} // namespace torchscope
