#include "probe/probe_dataset.h"

#include "common/error.h"
#include "common/strings.h"
#include "graph/engine.h"
#include "model/model.h"
#include "probe/activation_cache.h"
#include "probe/model_extender.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <set>

namespace torchscope {

ProbeSamples tensorSamples(const at::Tensor& samples, const at::Tensor& labelsIn, int batchSize,
    const std::string& fingerprint, std::vector<std::string> classNames, const Shard& shard)
{
    if (samples.dim() < 1 || samples.size(0) == 0)
        throw Error("probe samples need rows: shape [N, ...], got " + shapeToString(samples.sizes().vec()));
    const at::Tensor labels = labelsIn.to(at::kCPU, at::kLong).flatten().contiguous();
    if (labels.numel() != samples.size(0))
        throw Error(std::to_string(labels.numel()) + " labels for " + std::to_string(samples.size(0)) + " samples");
    const std::set<int64_t> values(labels.data_ptr<int64_t>(), labels.data_ptr<int64_t>() + labels.numel());
    const std::vector<int64_t> sorted(values.begin(), values.end());

    ProbeSamples out;
    for (int64_t i = 0; i < labels.numel(); ++i)
        out.labels.push_back(
            std::lower_bound(sorted.begin(), sorted.end(), labels[i].item<int64_t>()) - sorted.begin());
    if (classNames.size() == sorted.size())
        out.classNames = std::move(classNames);
    else
        for (int64_t value : sorted)
            out.classNames.push_back(std::to_string(value));
    out.fingerprint = fingerprint;
    const int64_t step = std::max(1, batchSize);
    const int64_t batches = shard.batchesOf((samples.size(0) + step - 1) / step);
    auto next = std::make_shared<int64_t>(0); // this shard's next batch
    out.next = [samples, next, step, batches, shard]() -> std::optional<SampleBatch> {
        if (*next >= batches)
            return std::nullopt;
        const int64_t begin = shard.globalBatch((*next)++) * step;
        const int64_t end = std::min(samples.size(0), begin + step);
        SampleBatch batch;
        batch.inputs = samples.slice(0, begin, end);
        for (int64_t i = begin; i < end; ++i)
            batch.sampleIds.push_back(i);
        return batch;
    };
    out.cancel = [] {};
    return out;
}

ProbeDataset collectProbeDataset(Engine& engine, const std::vector<std::string>& layers, ProbePooling pooling,
    ProbeSamples& samples, ActivationCache* cache, const ProgressCallback& progress)
{
    if (layers.empty())
        throw Error("choose at least one layer to probe");
    ProbeDataset dataset;
    dataset.classNames = samples.classNames;
    const auto total = static_cast<int64_t>(samples.labels.size());

    std::map<std::string, std::string> keys;
    std::optional<at::Tensor> sampleIds;
    std::vector<std::string> missing;
    if (cache) {
        const std::string modelHash = fileContentHash(engine.model().path());
        for (const auto& layer : layers) {
            keys[layer]
                = ActivationCache::key(modelHash, layer, toString(pooling), samples.preprocessing, samples.fingerprint);
            const auto hit = cache->find(keys[layer]);
            if (hit && (!sampleIds || at::equal(*sampleIds, hit->sampleIds))) {
                dataset.features[layer] = hit->features;
                dataset.cachedLayers.push_back(layer);
                sampleIds = hit->sampleIds;
            } else {
                missing.push_back(layer);
            }
        }
    } else {
        missing = layers;
    }

    if (!missing.empty()) {
        std::map<std::string, std::vector<at::Tensor>> parts;
        std::vector<int64_t> ids;
        std::optional<std::optional<std::string>> cut;
        int64_t done = 0;
        while (auto batch = samples.next()) {
            dataset.failures.insert(dataset.failures.end(), batch->failures.begin(), batch->failures.end());
            done += static_cast<int64_t>(batch->sampleIds.size() + batch->failures.size());
            if (batch->inputs.defined() && !batch->sampleIds.empty()) {
                const RunResult result
                    = runStump(engine, {}, missing, forwardInputsFromBatch(engine.model(), batch->inputs), {}, cut);
                for (const auto& layer : missing)
                    parts[layer].push_back(probeFeatures(result.tensor(layer), pooling).cpu());
                ids.insert(ids.end(), batch->sampleIds.begin(), batch->sampleIds.end());
                dataset.samplesRun += static_cast<int64_t>(batch->sampleIds.size());
                for (const auto& w : result.warnings)
                    appendUnique(dataset.warnings, w);
            }
            if (progress && !progress(Progress{done, total, "activations", {}})) {
                samples.cancel();
                dataset.cancelled = true;
                dataset.features.clear();
                return dataset;
            }
        }
        if (ids.empty() && !samples.shareOfJob)
            throw Error("no sample could be read, so there is nothing to train a probe on");
        const at::Tensor runIds = at::tensor(ids, at::kLong);
        if (sampleIds && !at::equal(*sampleIds, runIds))
            throw Error("the cached features and this run cover different samples; clear the activation cache");
        sampleIds = runIds;
        for (const auto& layer : missing) {
            dataset.features[layer] = parts[layer].empty() ? at::empty({0, 0}) : at::cat(parts[layer]);
            if (cache)
                cache->store(keys[layer], {dataset.features[layer], runIds});
        }
    } else if (progress) {
        progress(Progress{total, total, "activations", {}});
    }

    const at::Tensor allLabels = at::tensor(samples.labels, at::kLong);
    dataset.labels = allLabels.index_select(0, *sampleIds);
    dataset.sampleIds = *sampleIds;
    return dataset;
}

} // namespace torchscope
