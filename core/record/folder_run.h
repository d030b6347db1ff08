#pragma once

#include "imaging/preprocessing.h"
#include "record/image_folder.h"

#include <ATen/core/Tensor.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace torchscope {

class Engine;
class Recorder;

struct FolderRunOptions {
    int batchSize = 16;
    int decodeThreads = 2;
};

struct FolderRunProgress {
    int64_t imagesDone = 0;
    int64_t imagesTotal = 0;
};

struct FolderRunSummary {
    int64_t images = 0; // run through the model
    int64_t selected = 0; // that satisfied the condition
    double seconds = 0.0;
    double imagesPerSecond = 0.0;
    bool cancelled = false;
    std::vector<std::pair<std::string, std::string>> failures; // unreadable images: path, why
    std::vector<std::string> warnings;
};

// Streams the rows of a tensor ([N, ...], as saved by torch.save) through the model in batches
// and feeds the recorder; labels (one per row, or empty) serve the conditions.
FolderRunSummary recordTensor(Engine& engine, Recorder& recorder, const at::Tensor& samples,
    const std::vector<int64_t>& labels, int batchSize,
    const std::function<bool(const FolderRunProgress&)>& progress = {});

// Streams a folder through the model in batches (decoded ahead on worker threads) and feeds
// the recorder. `progress` is called after every batch; returning false cancels, keeping what
// was recorded so far consistent (whole batches only). Throws torchscope::Error.
FolderRunSummary recordFolder(Engine& engine, Recorder& recorder, const ImageFolder& folder,
    const Preprocessing& preprocessing, const FolderRunOptions& options,
    const std::function<bool(const FolderRunProgress&)>& progress = {});

} // namespace torchscope
