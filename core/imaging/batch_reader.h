#pragma once

#include "common/batch_stream.h"
#include "imaging/image_folder.h"
#include "preprocess/preprocessing.h"

#include <ATen/core/Tensor.h>

#include <atomic>
#include <condition_variable>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace torchscope {

// Decodes and preprocesses a folder's images into batches on worker threads, a few batches
// ahead of the consumer, so that the model never waits for the decoder. Batches come out in
// folder order. Destroying the reader (or cancel()) stops the workers.
class BatchReader {
public:
    // `shard`: only these batches of the folder (a rank's share of a distributed run); indices stay the folder's.
    BatchReader(const ImageFolder& folder, const Preprocessing& preprocessing, int batchSize, int threads,
        int batchesAhead = 3, const Shard& shard = {});
    ~BatchReader();
    BatchReader(const BatchReader&) = delete;
    BatchReader& operator=(const BatchReader&) = delete;

    // The next batch, or nothing at the end. Throws torchscope::Error when images of different
    // sizes meet in one batch.
    std::optional<ImageBatch> next();
    void cancel();
    int64_t batchCount() const { return batchCount_; } // of this shard

private:
    void work();

    const ImageFolder folder_;
    const Preprocessing preprocessing_;
    const int batchSize_;
    const int batchesAhead_;
    const Shard shard_;
    const int64_t batchCount_; // of this shard
    std::atomic<int64_t> nextToDecode_{0};
    int64_t nextToHandOut_ = 0;
    std::map<int64_t, ImageBatch> ready_;
    std::mutex mutex_;
    std::condition_variable changed_;
    std::atomic_bool stopping_{false};
    std::vector<std::thread> workers_;
};

} // namespace torchscope
