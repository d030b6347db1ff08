#pragma once

#include <ATen/core/Tensor.h>

#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace torchscope {

class Engine;
class Recorder;

struct ImageBatch {
    at::Tensor images; // [N, C, H, W], preprocessed
    std::vector<int64_t> indices; // positions in the folder's image list
    std::vector<int64_t> labels; // true labels (-1: none)
    std::vector<std::pair<std::string, std::string>> failures; // path, why: skipped images
    std::exception_ptr error; // a batch that cannot be formed (images of different sizes)
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

// The loop every stream shares: `next` yields batches until it returns nothing; each runs through
// the model and feeds the recorder. `progress` is called after every batch; returning false
// cancels (whole batches only, so what was recorded stays consistent) and calls `stop`.
FolderRunSummary recordBatches(Engine& engine, Recorder& recorder, int64_t total,
    const std::function<std::optional<ImageBatch>()>& next,
    const std::function<bool(const FolderRunProgress&)>& progress, const std::function<void()>& stop);

// Streams the rows of a tensor ([N, ...], as saved by torch.save) through the model in batches
// and feeds the recorder; labels (one per row, or empty) serve the conditions.
FolderRunSummary recordTensor(Engine& engine, Recorder& recorder, const at::Tensor& samples,
    const std::vector<int64_t>& labels, int batchSize,
    const std::function<bool(const FolderRunProgress&)>& progress = {});

} // namespace torchscope
