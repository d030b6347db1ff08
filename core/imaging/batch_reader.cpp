#include "imaging/batch_reader.h"

#include "common/error.h"
#include "common/strings.h"
#include "imaging/image_decoder.h"
#include "imaging/image_tensor.h"
#include "preprocess/preprocess_tensor.h"

#include <ATen/ATen.h>

namespace torchscope {

BatchReader::BatchReader(const ImageFolder& folder, const Preprocessing& preprocessing, int batchSize, int threads,
    int batchesAhead, const Shard& shard)
    : folder_(folder)
    , preprocessing_(preprocessing)
    , batchSize_(std::max(1, batchSize))
    , batchesAhead_(std::max(1, batchesAhead))
    , shard_(shard)
    , batchCount_(shard.batchesOf(
          (static_cast<int64_t>(folder.images.size()) + std::max(1, batchSize) - 1) / std::max(1, batchSize)))
{
    for (int i = 0; i < std::max(1, threads); ++i)
        workers_.emplace_back([this] { work(); });
}

BatchReader::~BatchReader()
{
    cancel();
    for (auto& worker : workers_)
        worker.join();
}

void BatchReader::cancel()
{
    stopping_ = true;
    changed_.notify_all();
}

void BatchReader::work()
{
    while (!stopping_) {
        const int64_t b = nextToDecode_++;
        if (b >= batchCount_)
            return;
        {
            // Stay at most batchesAhead_ batches in front of the consumer: memory stays flat.
            std::unique_lock<std::mutex> lock(mutex_);
            changed_.wait(lock, [&] { return stopping_ || b < nextToHandOut_ + batchesAhead_; });
            if (stopping_)
                return;
        }
        ImageBatch batch;
        std::vector<at::Tensor> images;
        const auto first = static_cast<size_t>(shard_.globalBatch(b) * batchSize_);
        const size_t last = std::min(folder_.images.size(), first + static_cast<size_t>(batchSize_));
        for (size_t i = first; i < last; ++i) {
            const LabelledImage& image = folder_.images[i];
            try {
                images.push_back(preprocessImage(imageToTensor(decodeImage(image.path)), preprocessing_));
                batch.indices.push_back(static_cast<int64_t>(i));
                batch.labels.push_back(image.label);
            } catch (const std::exception& e) {
                batch.failures.emplace_back(image.path, e.what());
            }
        }
        try {
            for (const auto& t : images)
                if (t.sizes() != images.front().sizes())
                    throw Error("images of different sizes cannot form one batch: "
                        + shapeToString(images.front().sizes().vec()) + " and " + shapeToString(t.sizes().vec())
                        + "; use a preprocessing with a crop");
            if (!images.empty())
                batch.images = at::stack(images);
        } catch (...) {
            batch.error = std::current_exception();
        }
        std::lock_guard<std::mutex> lock(mutex_);
        ready_.emplace(b, std::move(batch));
        changed_.notify_all();
    }
}

std::optional<ImageBatch> BatchReader::next()
{
    std::unique_lock<std::mutex> lock(mutex_);
    if (nextToHandOut_ >= batchCount_)
        return std::nullopt;
    changed_.wait(lock, [&] { return stopping_ || ready_.count(nextToHandOut_); });
    if (stopping_ && !ready_.count(nextToHandOut_))
        return std::nullopt;
    ImageBatch batch = std::move(ready_.at(nextToHandOut_));
    ready_.erase(nextToHandOut_++);
    changed_.notify_all();
    if (batch.error)
        std::rethrow_exception(batch.error);
    return batch;
}

} // namespace torchscope
