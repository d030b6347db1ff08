#include "distributed/distributed_recording.h"

#include "attention/attention_statistics.h"
#include "common/error.h"
#include "common/strings.h"
#include "distributed/cluster.h"
#include "distributed/lockstep.h"
#include "graph/engine.h"
#include "record/recorder.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <optional>
#include <set>

namespace torchscope {
namespace {

using nlohmann::json;

std::string rangesText(const std::map<std::string, std::pair<double, double>>& ranges)
{
    json j = json::object();
    for (const auto& [key, range] : ranges)
        j[key] = {range.first, range.second};
    return j.dump();
}

// Each new key takes the range of the lowest rank that saw it in this step: the earliest batch.
void agreeOnRanges(Recorder& recorder, const std::vector<StepResult>& reports)
{
    std::set<std::string> agreed;
    for (const auto& report : reports) {
        if (report.agreement.empty())
            continue;
        const json ranges = json::parse(report.agreement);
        for (const auto& [key, range] : ranges.items())
            if (agreed.insert(key).second)
                recorder.fixHistogramRange(key, range.at(0).get<double>(), range.at(1).get<double>());
    }
}

} // namespace

FolderRunResult recordShareTogether(
    Lockstep& lockstep, Engine& engine, Recorder& recorder, const BatchStream& share, const ProgressCallback& progress)
{
    Request request;
    std::vector<at::Tensor> editTensors;
    lockstep.orFail([&] { request = recordingRequest(engine, recorder.config(), &editTensors); });
    lockstep.agree({});

    const auto start = std::chrono::steady_clock::now();
    FolderRunResult summary;
    Progress state{0, share.total, "images", {}};
    bool stopAsked = false;
    for (int64_t step = 0;; ++step) {
        StepResult mine;
        mine.stop = stopAsked;
        std::optional<ImageBatch> batch;
        std::optional<RunResult> result;
        at::Tensor mask;
        if (!stopAsked)
            lockstep.orFail(
                [&] {
                    batch = share.next();
                    if (!batch)
                        return;
                    mine.hadBatch = true;
                    mine.images = static_cast<int64_t>(batch->indices.size() + batch->failures.size());
                    mine.failures = batch->failures;
                    if (!batch->images.defined() || batch->images.size(0) == 0)
                        return;
                    result = engine.run(request, forwardInputsFromBatch(engine.model(), batch->images), editTensors);
                    addAttentionFigures(*result, engine.model(), batch->images.sizes().vec());
                    mask = conditionMask(recorder.config().condition, result->values.front().second,
                        recorder.config().scores, batch->labels);
                    mine.samples = batch->images.size(0);
                    mine.selected = mask.sum().item<int64_t>();
                    mine.agreement = rangesText(recorder.histogramRangeCandidates(*result, mask));
                },
                share.stop);
        const std::vector<StepResult> all = lockstep.exchange(mine);
        bool anyBatch = false, anyStop = false;
        for (const auto& report : all) {
            anyBatch = anyBatch || report.hadBatch;
            anyStop = anyStop || report.stop;
        }
        if (anyStop) {
            // Every rank stops here, before adding this step: the recording holds whole steps.
            summary.cancelled = true;
            summary.warnings.push_back("stopped on request after " + std::to_string(step) + " step(s) of "
                + std::to_string(all.size()) + " batches each: every rank recorded its batches of those steps ("
                + std::to_string(state.done) + " images)");
            share.stop();
            break;
        }
        if (!anyBatch)
            break;
        agreeOnRanges(recorder, all);
        if (result)
            lockstep.orFail(
                [&] {
                    recorder.add(*result, batch->indices, mask);
                    for (const auto& w : result->warnings)
                        appendUnique(summary.warnings, w);
                },
                share.stop);
        for (const auto& report : all) {
            state.done += report.images;
            summary.images += report.samples;
            summary.selected += report.selected;
            summary.failures.insert(summary.failures.end(), report.failures.begin(), report.failures.end());
        }
        stopAsked = progress && !progress(state);
    }
    summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    summary.imagesPerSecond = summary.seconds > 0 ? summary.images / summary.seconds : 0.0;
    return summary;
}

std::optional<MergeResult> mergeRecordingsToRoot(Lockstep& lockstep, Recorder& recorder, FolderRunResult& summary)
{
    std::string bytes, error;
    try {
        bytes = recorder.serialized();
    } catch (const std::exception& e) {
        error = std::string("could not serialise its recording: ") + e.what();
    }
    lockstep.agree(error);
    const auto start = std::chrono::steady_clock::now();
    Cluster& cluster = lockstep.cluster();
    const std::vector<std::string> warnings = cluster.allGather(json(summary.warnings).dump());
    const std::vector<std::string> recordings = cluster.gatherToRoot(bytes);
    if (cluster.rank() != 0)
        return std::nullopt;
    MergeResult figures;
    for (size_t r = 1; r < recordings.size(); ++r) {
        recorder.merge(recordings[r]);
        figures.bytes += static_cast<int64_t>(recordings[r].size());
        for (const auto& w : json::parse(warnings[r]).get<std::vector<std::string>>())
            appendUnique(summary.warnings, w);
    }
    figures.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return figures;
}

} // namespace torchscope
