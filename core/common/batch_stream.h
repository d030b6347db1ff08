#pragma once

// Samples batch by batch, from wherever they come (an image folder read ahead by imaging's
// BatchReader, a tensor's rows): what recordings, probe data and comparisons consume alike.

#include "common/progress.h"

#include <ATen/core/Tensor.h>

#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace torchscope {

// A rank's share of a distributed run's batches: global batches index, index + count, index + 2 count, ...
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

} // namespace torchscope
