#include "record/batch_run.h"

#include "attention/attention_statistics.h"
#include "common/error.h"
#include "common/strings.h"
#include "graph/engine.h"
#include "graph/model_output.h"
#include "record/recorder.h"
#include "sae/sae_splice.h"

#include <ATen/ATen.h>
#include <torch/script.h>

#include <algorithm>
#include <chrono>
#include <memory>

namespace torchscope {

at::Tensor conditionMask(const Condition& condition, const c10::IValue& output, const std::string& scoresElement,
    const std::vector<int64_t>& labels)
{
    const auto n = static_cast<int64_t>(labels.size());
    if (condition.kind == Condition::Kind::All)
        return at::ones({n}, at::kBool);
    const at::Tensor truth = at::tensor(labels, at::kLong);
    if (condition.needsTrueLabels() && (truth < 0).any().item<bool>())
        throw Error("this condition needs true labels: give an ImageFolder-style folder (one subfolder per class)");
    at::Tensor predicted;
    if (condition.needsPredictions()) {
        const ScoreOutput scores = findScores(output, scoresElement);
        if (scores.kind != OutputKind::Classes)
            throw Error("this condition needs the model's class scores ([batch, classes]); the output is "
                + scores.described + " (or the run is truncated)");
        predicted = scores.scores.argmax(1).cpu();
    }
    auto inSet = [&](const at::Tensor& classes) {
        at::Tensor mask = at::zeros({n}, at::kBool);
        for (int64_t label : condition.labels)
            mask = mask | (classes == label);
        return mask;
    };
    switch (condition.kind) {
    case Condition::Kind::TrueLabelIn:
        return inSet(truth);
    case Condition::Kind::PredictedIn:
        return inSet(predicted);
    case Condition::Kind::Correct:
        return predicted == truth;
    case Condition::Kind::Wrong:
        return predicted != truth;
    case Condition::Kind::All:
        break;
    }
    return at::ones({n}, at::kBool);
}

Request recordingRequest(Engine& engine, const RecorderConfig& config, std::vector<at::Tensor>* editTensors)
{
    Request request;
    request.grabs = config.grabs;
    request.targetClass = config.targetClass;
    request.scores = config.scores;
    request.edits = config.edits;
    for (const auto& edit : request.edits)
        if (edit.kind == EditKind::Add || edit.kind == EditKind::Replace || (edit.takesTensor() && !editTensors))
            throw Error("a recording applies zero, scale and sparse-autoencoder edits; " + edit.path
                + " adds or replaces a tensor, which fits one input, not a folder (use run)");
    if (editTensors) // a sparse autoencoder's edit reads its SAE once: its tensors go with every batch
        *editTensors = prepareSaeEdits(request, {});
    engine.prepare(request);
    return request;
}

FolderRunResult recordBatches(
    Engine& engine, Recorder& recorder, const BatchStream& stream, const ProgressCallback& progress)
{
    std::vector<at::Tensor> editTensors;
    const Request request = recordingRequest(engine, recorder.config(), &editTensors);
    FolderRunResult summary;
    const BatchLoop loop = forEachBatch(stream, progress, [&](const ImageBatch& batch) {
        RunResult result = engine.run(request, forwardInputsFromBatch(engine.model(), batch.images), editTensors);
        addAttentionFigures(result, engine.model(), batch.images.sizes().vec());
        const at::Tensor mask = conditionMask(
            recorder.config().condition, result.values.front().second, recorder.config().scores, batch.labels);
        recorder.add(result, batch.indices, mask);
        summary.selected += mask.sum().item<int64_t>();
        for (const auto& w : result.warnings)
            appendUnique(summary.warnings, w);
    });
    summary.images = loop.samples;
    summary.failures = loop.failures;
    summary.cancelled = loop.cancelled;
    summary.seconds = loop.seconds;
    summary.imagesPerSecond = summary.seconds > 0 ? summary.images / summary.seconds : 0.0;
    return summary;
}

FolderRunResult recordTensor(Engine& engine, Recorder& recorder, const at::Tensor& samples,
    const std::vector<int64_t>& labels, int batchSize, const ProgressCallback& progress)
{
    return recordBatches(engine, recorder, tensorBatches(samples, labels, batchSize), progress);
}

} // namespace torchscope
