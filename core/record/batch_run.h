#pragma once

#include "common/progress.h"

#include <ATen/core/Tensor.h>

#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace c10 {
struct IValue;
}

namespace torchscope {

class Engine;
class Recorder;
struct Condition;
struct RecorderConfig;
struct Request;

// A rank's share of a job's batches: global batches index, index + count, index + 2 count, ...
// (a split by sample position, so what each rank gets never depends on timing). {0, 1}: all.
struct Shard {
    int index = 0;
    int count = 1;
    // How many of `batches` batches this shard has, and the global number of its local batch.
    int64_t batchesOf(int64_t batches) const { return batches > index ? (batches - index + count - 1) / count : 0; }
    int64_t globalBatch(int64_t local) const { return index + local * count; }
};

struct ImageBatch {
    at::Tensor images; // [N, C, H, W], preprocessed
    std::vector<int64_t> indices; // positions in the folder's image list
    std::vector<int64_t> labels; // true labels (-1: none)
    std::vector<std::pair<std::string, std::string>> failures; // path, why: skipped images
    std::exception_ptr error; // a batch that cannot be formed (images of different sizes)
};

struct FolderRunResult {
    int64_t images = 0; // run through the model
    int64_t selected = 0; // that satisfied the condition
    double seconds = 0.0;
    double imagesPerSecond = 0.0;
    bool cancelled = false;
    std::vector<std::pair<std::string, std::string>> failures; // unreadable images: path, why
    std::vector<std::string> warnings;
};

// Where samples come from, batch by batch: `next` yields batches until it returns nothing; `stop`
// is called when a run is cancelled (a reader's threads stop). A recording and a comparison take
// the same streams.
struct BatchStream {
    int64_t total = 0;
    std::function<std::optional<ImageBatch>()> next;
    std::function<void()> stop = [] {};
};

// What the loop over a stream did.
struct BatchLoop {
    int64_t samples = 0; // handed to `handle`
    bool cancelled = false;
    double seconds = 0.0;
    std::vector<std::pair<std::string, std::string>> failures; // unreadable images: path, why
};

// The loop every stream shares: each batch with samples goes to `handle`; `progress` is called
// after every batch, and returning false cancels (whole batches only, so what was handled stays
// consistent) and calls the stream's `stop`.
BatchLoop forEachBatch(
    const BatchStream& stream, const ProgressCallback& progress, const std::function<void(const ImageBatch&)>& handle);

// The rows of a tensor ([N, ...], as saved by torch.save) in batches; labels: one per row, or empty.
// `total` stays the whole tensor's rows when the stream is a shard.
BatchStream tensorBatches(
    const at::Tensor& samples, const std::vector<int64_t>& labels, int batchSize, const Shard& shard = {});

// The request a recording runs with (its grabs, target class, scores and edits), prepared.
// Throws torchscope::Error for an edit a recording cannot apply.
Request recordingRequest(Engine& engine, const RecorderConfig& config);

// Which samples of a batch the condition keeps (bool [N]) from the run's output and true labels.
at::Tensor conditionMask(const Condition& condition, const c10::IValue& output, const std::string& scoresElement,
    const std::vector<int64_t>& labels);

// Runs every batch of the stream through the model and feeds the recorder.
FolderRunResult recordBatches(
    Engine& engine, Recorder& recorder, const BatchStream& stream, const ProgressCallback& progress = {});

// Streams the rows of a tensor through the model in batches and feeds the recorder; labels (one
// per row, or empty) serve the conditions.
FolderRunResult recordTensor(Engine& engine, Recorder& recorder, const at::Tensor& samples,
    const std::vector<int64_t>& labels, int batchSize, const ProgressCallback& progress = {});

} // namespace torchscope
