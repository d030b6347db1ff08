#pragma once

#include "common/progress.h"
#include "imaging/image_folder.h"
#include "preprocess/preprocessing.h"
#include "record/batch_run.h"
#include "record/recording_files.h"

#include <ATen/core/Tensor.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace torchscope {

struct FolderRunOptions {
    int batchSize = 16;
    int decodeThreads = 2;
    Shard shard; // a rank's share of a distributed run's batches; all by default
};

// Streams a folder through the model in batches (decoded ahead on worker threads) and feeds
// the recorder. `progress` is called after every batch; returning false cancels, keeping what
// was recorded so far consistent (whole batches only). Throws torchscope::Error.
FolderRunResult recordFolder(Engine& engine, Recorder& recorder, const ImageFolder& folder,
    const Preprocessing& preprocessing, const FolderRunOptions& options, const ProgressCallback& progress = {});

// The folder's images, decoded and preprocessed ahead on `options.decodeThreads` threads, as a
// stream (recordings and comparisons read it alike).
BatchStream folderBatches(
    const ImageFolder& folder, const Preprocessing& preprocessing, const FolderRunOptions& options);

// What a recording of `folder` says of its samples: the image files in sample order, the class
// folders and their labels. The caller adds the model and the condition.
RecordingSource recordingSource(const ImageFolder& folder);

} // namespace torchscope
