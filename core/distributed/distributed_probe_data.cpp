#include "distributed/distributed_probe_data.h"

#include "common/error.h"
#include "common/strings.h"
#include "distributed/cluster.h"
#include "distributed/lockstep.h"
#include "graph/engine.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <nlohmann/json.hpp>

namespace torchscope {
namespace {

// A rank's rows: its sample ids, then each layer's features, in `layers` order.
std::string serializedShare(const ProbeDataset& dataset, const std::vector<std::string>& layers)
{
    c10::impl::GenericList tensors(c10::TensorType::get());
    tensors.push_back(dataset.sampleIds.defined() ? dataset.sampleIds : at::empty({0}, at::kLong));
    for (const auto& layer : layers)
        tensors.push_back(dataset.features.count(layer) ? dataset.features.at(layer) : at::empty({0, 0}));
    const std::vector<char> bytes = torch::jit::pickle_save(c10::IValue(tensors));
    return std::string(bytes.begin(), bytes.end());
}

} // namespace

ProbeDataset collectProbeDatasetTogether(Lockstep& lockstep, Engine& engine, const std::vector<std::string>& layers,
    ProbePooling pooling, ProbeSamples& share, const ProgressCallback& progress)
{
    // Each call of next() is one step: this rank's batch (if any), then the exchange.
    bool stopAsked = false, stopped = false, finished = false;
    int64_t done = 0;
    std::vector<std::pair<std::string, std::string>> failures;
    ProbeSamples synced = share;
    synced.shareOfJob = true;
    synced.next = [&]() -> std::optional<SampleBatch> {
        if (finished || stopped)
            return std::nullopt;
        StepResult mine;
        mine.stop = stopAsked;
        std::optional<SampleBatch> batch;
        if (!stopAsked)
            lockstep.orFail([&] { batch = share.next(); }, share.cancel);
        if (batch) {
            mine.hadBatch = true;
            mine.images = static_cast<int64_t>(batch->sampleIds.size() + batch->failures.size());
            mine.failures = batch->failures;
            batch->failures.clear(); // reported in batch order below, for all ranks
        }
        bool anyBatch = false;
        for (const auto& report : lockstep.exchange(mine)) {
            anyBatch = anyBatch || report.hadBatch;
            stopped = stopped || report.stop;
            done += report.images;
            failures.insert(failures.end(), report.failures.begin(), report.failures.end());
        }
        if (stopped)
            return SampleBatch{}; // nothing to run; the progress call after it cancels
        if (!anyBatch) {
            finished = true;
            return std::nullopt;
        }
        return batch ? std::move(*batch) : SampleBatch{};
    };
    const auto syncedProgress = [&](const Progress& local) {
        if (stopped)
            return false;
        stopAsked = progress && !progress(Progress{done, local.total, local.stage, {}});
        return true;
    };

    ProbeDataset mine;
    lockstep.orFail([&] { mine = collectProbeDataset(engine, layers, pooling, synced, nullptr, syncedProgress); });
    if (mine.cancelled)
        return mine;

    std::string bytes, error;
    try {
        bytes = serializedShare(mine, layers);
    } catch (const c10::Error& e) {
        error = "could not serialise its features: " + torchErrorMessage(e.what_without_backtrace());
    }
    lockstep.agree(error);
    Cluster& cluster = lockstep.cluster();
    const std::vector<std::string> warnings = cluster.allGather(nlohmann::json(mine.warnings).dump());
    const std::vector<std::string> shares = cluster.gatherToRoot(bytes);
    if (cluster.rank() != 0)
        return ProbeDataset{};

    ProbeDataset all;
    all.classNames = share.classNames;
    all.failures = failures;
    std::vector<at::Tensor> ids;
    std::map<std::string, std::vector<at::Tensor>> features;
    for (size_t r = 0; r < shares.size(); ++r) {
        const auto list
            = torch::jit::pickle_load(std::vector<char>(shares[r].begin(), shares[r].end())).toTensorVector();
        if (list.front().numel() == 0)
            continue;
        ids.push_back(list.front());
        for (size_t l = 0; l < layers.size(); ++l)
            features[layers[l]].push_back(list.at(l + 1));
        for (const auto& w : nlohmann::json::parse(warnings[r]).get<std::vector<std::string>>())
            appendUnique(all.warnings, w);
    }
    if (ids.empty())
        throw Error("no sample could be read on any rank, so there is nothing to train a probe on");
    const at::Tensor allIds = at::cat(ids);
    const at::Tensor order = std::get<1>(at::sort(allIds, /*stable=*/true, /*dim=*/0, /*descending=*/false));
    all.sampleIds = allIds.index_select(0, order);
    for (const auto& layer : layers)
        all.features[layer] = at::cat(features[layer]).index_select(0, order);
    all.labels = at::tensor(share.labels, at::kLong).index_select(0, all.sampleIds);
    all.samplesRun = all.sampleIds.numel();
    return all;
}

} // namespace torchscope
