#pragma once

#include "imaging/preprocessing.h"
#include "record/batch_run.h"
#include "record/image_folder.h"

#include <ATen/core/Tensor.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace torchscope {

struct FolderRunOptions {
    int batchSize = 16;
    int decodeThreads = 2;
};

// Streams a folder through the model in batches (decoded ahead on worker threads) and feeds
// the recorder. `progress` is called after every batch; returning false cancels, keeping what
// was recorded so far consistent (whole batches only). Throws torchscope::Error.
FolderRunSummary recordFolder(Engine& engine, Recorder& recorder, const ImageFolder& folder,
    const Preprocessing& preprocessing, const FolderRunOptions& options,
    const std::function<bool(const FolderRunProgress&)>& progress = {});

} // namespace torchscope
