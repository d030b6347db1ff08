#include "common/batch_stream.h"

#include "common/error.h"
#include "common/strings.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <memory>

namespace torchscope {

BatchLoop forEachBatch(
    const BatchStream& stream, const ProgressCallback& progress, const std::function<void(const ImageBatch&)>& handle)
{
    const auto start = std::chrono::steady_clock::now();
    BatchLoop loop;
    Progress state{0, stream.total, "images", {}};
    while (auto batch = stream.next()) {
        loop.failures.insert(loop.failures.end(), batch->failures.begin(), batch->failures.end());
        state.done += static_cast<int64_t>(batch->indices.size() + batch->failures.size());
        if (batch->images.defined() && batch->images.size(0) > 0) {
            handle(*batch);
            loop.samples += batch->images.size(0);
        }
        if (progress && !progress(state)) {
            loop.cancelled = true;
            stream.stop();
            break;
        }
    }
    loop.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return loop;
}

BatchStream tensorBatches(
    const at::Tensor& samples, const std::vector<int64_t>& labels, int batchSize, const Shard& shard)
{
    if (samples.dim() < 1 || samples.size(0) == 0)
        throw Error(
            "a tensor to record or compare needs rows: shape [N, ...], got " + shapeToString(samples.sizes().vec()));
    if (!labels.empty() && static_cast<int64_t>(labels.size()) != samples.size(0))
        throw Error(std::to_string(labels.size()) + " labels for " + std::to_string(samples.size(0)) + " samples");
    const int64_t step = std::max(1, batchSize);
    const int64_t batches = shard.batchesOf((samples.size(0) + step - 1) / step);
    auto next = std::make_shared<int64_t>(0); // this shard's next batch
    BatchStream stream;
    stream.total = samples.size(0);
    stream.next = [samples, labels, next, step, batches, shard]() -> std::optional<ImageBatch> {
        if (*next >= batches)
            return std::nullopt;
        ImageBatch batch;
        const int64_t begin = shard.globalBatch((*next)++) * step;
        const int64_t end = std::min(samples.size(0), begin + step);
        batch.images = samples.slice(0, begin, end);
        for (int64_t i = begin; i < end; ++i) {
            batch.indices.push_back(i);
            batch.labels.push_back(labels.empty() ? -1 : labels[static_cast<size_t>(i)]);
        }
        return batch;
    };
    return stream;
}

} // namespace torchscope
