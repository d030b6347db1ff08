#include "attribution/model_scores.h"

#include "attribution/grad_cam.h"
#include "common/error.h"
#include "common/strings.h"
#include "graph/engine.h"
#include "graph/model_output.h"
#include "graph/request.h"
#include "probe/linear_probe.h"

#include <ATen/ATen.h>
#include <limits>
#include <torch/csrc/autograd/autograd.h>
#include <torch/script.h>

namespace torchscope {
namespace {

Request scoring(const ScoreSource& source, int64_t target)
{
    Request run;
    run.targetClass = target;
    run.targetRegion = source.region;
    run.scores = source.scores;
    run.labels = source.labels;
    return run;
}

// A probe's scores of a batch: the model run to the probe's layer (keeping the autograd graph back
// to `batch` when it requires grad) with `also` grabbed too, the probe applied to the layer's output.
struct ProbeRun {
    at::Tensor scores; // [N, K] or [N, 1]
    RunResult run;
};

ProbeRun probeRun(Engine& engine, const at::Tensor& batch, const ProbeExtension& probe, const std::string& also = {})
{
    Request request;
    request.grabs = {GrabSpec{probe.layer, CaptureKind::Output, 0}};
    if (!also.empty() && also != probe.layer)
        request.grabs.push_back(GrabSpec{also, CaptureKind::Output, 0});
    ProbeRun out;
    out.run = engine.runWithGraph(request, forwardInputsFromBatch(engine.model(), batch));
    out.scores = probe.module->forward({out.run.tensor(probe.layer)}).toTensor();
    if (out.scores.dim() != 2)
        throw Error("the probe on '" + probe.layer + "' gives " + shapeToString(out.scores.sizes().vec())
            + "; scores [N, classes] or [N, 1] were expected");
    return out;
}

// The probe's predicted class of the first input, and the score of `target` summed over the batch.
std::pair<int64_t, at::Tensor> probeTargetScore(const at::Tensor& scores, int64_t target)
{
    const bool binary = scores.size(1) == 1;
    const int64_t classes = binary ? 2 : scores.size(1);
    if (target < 0)
        target = binary ? (scores[0][0].item<double>() > 0.0 ? 1 : 0) : scores[0].argmax().item<int64_t>();
    if (target >= classes)
        throw Error(
            "the probe has " + std::to_string(classes) + " classes; class " + std::to_string(target) + " is not one");
    const at::Tensor score
        = binary ? (target == 1 ? scores.select(1, 0) : -scores.select(1, 0)) : scores.select(1, target);
    return {target, score.sum()};
}

std::string probeClassName(const ProbeExtension& probe, int64_t target)
{
    return "probe class " + std::to_string(target)
        + (target < static_cast<int64_t>(probe.classNames.size())
                ? " (" + probe.classNames[static_cast<size_t>(target)] + ")"
                : std::string())
        + " on " + probe.layer;
}

} // namespace

InputGradients inputGradients(Engine& engine, const at::Tensor& batch, const ScoreSource& source, int64_t target)
{
    if (source.probe) {
        const at::Tensor x = batch.detach().to(at::kFloat).requires_grad_(true);
        const ProbeRun run = probeRun(engine, x, *source.probe);
        const auto [resolved, score] = probeTargetScore(run.scores, target);
        InputGradients out;
        out.input = torch::autograd::grad({score}, {x})[0].detach();
        out.target = resolved;
        out.description = probeClassName(*source.probe, resolved);
        out.score = score.item<double>();
        return out;
    }
    Request run = scoring(source, target);
    run.inputGradient = true;
    const RunResult result = engine.run(run, forwardInputsFromBatch(engine.model(), batch));
    InputGradients out;
    out.input = result.tensor("input:grad").to(batch.device(), at::kFloat); // the engine ran on the model's device
    out.target = result.targetIndex;
    out.description = result.target;
    const ScoreOutput scores = findScores(*result.find("output"), source.scores);
    out.score = scores.kind == OutputKind::Classes ? scores.scores.select(1, out.target).sum().item<double>()
                                                   : std::numeric_limits<double>::quiet_NaN();
    return out;
}

at::Tensor classScores(Engine& engine, const at::Tensor& batch, const ScoreSource& source, int64_t target,
    const std::string& purpose, bool probabilities)
{
    if (source.probe) {
        const at::NoGradGuard noGrad;
        const at::Tensor scores = probeRun(engine, batch, *source.probe).scores.to(at::kFloat);
        if (scores.size(1) == 1) { // two classes: the second's logit
            if (target > 1)
                throw Error("the probe has 2 classes; class " + std::to_string(target) + " is not one");
            const at::Tensor logit = target == 1 ? scores.select(1, 0) : -scores.select(1, 0);
            return (probabilities ? at::sigmoid(logit) : logit).cpu();
        }
        if (target < 0 || target >= scores.size(1))
            throw Error("class " + std::to_string(target) + " is not among the probe's "
                + std::to_string(scores.size(1)) + " classes");
        return (probabilities ? at::softmax(scores, 1) : scores).select(1, target).cpu();
    }
    // No autograd bookkeeping: these inputs are many. Not InferenceMode: the engine's graph functions
    // are shared with gradient runs, and what a function's first run makes and keeps (the executor's
    // folded constants: a ViT's) would be an inference tensor that a later backward cannot save.
    const at::NoGradGuard noGrad;
    Request run;
    run.scores = source.scores;
    const RunResult result = engine.run(run, forwardInputsFromBatch(engine.model(), batch));
    const ScoreOutput scores = findScores(*result.find("output"), source.scores);
    if (scores.kind != OutputKind::Classes)
        throw Error(purpose + " explains class scores [N, classes]; this model's output is " + scores.described);
    if (target < 0 || target >= scores.scores.size(1))
        throw Error("class " + std::to_string(target) + " is not among the model's "
            + std::to_string(scores.scores.size(1)) + " classes");
    const at::Tensor values = probabilities ? at::softmax(scores.scores.to(at::kFloat), 1) : scores.scores;
    return values.select(1, target).to(at::kFloat).cpu();
}

at::Tensor predictedClasses(Engine& engine, const at::Tensor& batch, const ScoreSource& source)
{
    if (source.probe) {
        const at::NoGradGuard noGrad;
        const at::Tensor scores = probeRun(engine, batch, *source.probe).scores;
        return (scores.size(1) == 1 ? scores.select(1, 0).gt(0).to(at::kLong) : scores.argmax(1)).cpu();
    }
    const at::NoGradGuard noGrad;
    Request run;
    run.scores = source.scores;
    const RunResult result = engine.run(run, forwardInputsFromBatch(engine.model(), batch));
    const ScoreOutput scores = findScores(*result.find("output"), source.scores);
    if (scores.kind != OutputKind::Classes)
        return at::full({batch.size(0)}, -1, at::kLong);
    return scores.scores.argmax(1).to(at::kLong).cpu();
}

std::string describeClass(int64_t target, const ScoreSource& source)
{
    if (source.probe)
        return probeClassName(*source.probe, target);
    if (target < 0)
        return "no class";
    std::string text = "class " + std::to_string(target);
    if (target < static_cast<int64_t>(source.labels.size()))
        text += " (" + source.labels[static_cast<size_t>(target)] + ")";
    return text;
}

namespace {

int64_t imageHeight(const at::Tensor& batch)
{
    return batch.dim() == 4 ? batch.size(2) : 0;
}

int64_t imageWidth(const at::Tensor& batch)
{
    return batch.dim() == 4 ? batch.size(3) : 0;
}

} // namespace

at::Tensor asLayerMaps(const at::Tensor& value, const std::string& layer, int64_t height, int64_t width)
{
    if (value.dim() == 4)
        return value.detach().to(at::kFloat);
    if (at::Tensor tokens
        = value.dim() == 3 ? tokensAsMaps(value.detach().to(at::kFloat), height, width) : at::Tensor();
        tokens.defined())
        return tokens;
    throw Error(describeNoGrid(value, layer, height, width, "a CAM"));
}

LayerGradients layerGradients(
    Engine& engine, const at::Tensor& batch, const ScoreSource& source, const std::string& layer, int64_t target)
{
    if (source.probe) {
        // The input requires grad so that every layer's output does, whatever the model's parameters.
        const ProbeRun run = probeRun(engine, batch.detach().to(at::kFloat).requires_grad_(true), *source.probe, layer);
        const auto [resolved, score] = probeTargetScore(run.scores, target);
        const at::Tensor activations = run.run.tensor(layer);
        if (!activations.requires_grad())
            throw Error("the probe's score does not depend on '" + layer + "': take a layer before the probe's, '"
                + source.probe->layer + "'");
        const at::Tensor gradients = torch::autograd::grad({score}, {activations}, {}, {}, false, true)[0];
        if (!gradients.defined())
            throw Error("the probe's score does not depend on '" + layer + "': take a layer before the probe's, '"
                + source.probe->layer + "'");
        return {asLayerMaps(activations, layer, imageHeight(batch), imageWidth(batch)),
            asLayerMaps(gradients.detach(), layer, imageHeight(batch), imageWidth(batch)), resolved,
            probeClassName(*source.probe, resolved)};
    }
    Request run = scoring(source, target);
    run.grabs = {GrabSpec{layer, CaptureKind::Output, 0}, GrabSpec{layer, CaptureKind::Gradient, 0}};
    const RunResult result = engine.run(run, forwardInputsFromBatch(engine.model(), batch));
    return {asLayerMaps(result.tensor(layer), layer, imageHeight(batch), imageWidth(batch)),
        asLayerMaps(result.tensor(layer + ":grad"), layer, imageHeight(batch), imageWidth(batch)), result.targetIndex,
        result.target};
}

at::Tensor layerActivations(Engine& engine, const at::Tensor& batch, const std::string& layer)
{
    const at::NoGradGuard noGrad;
    Request run;
    run.grabs = {GrabSpec{layer, CaptureKind::Output, 0}};
    const RunResult result = engine.run(run, forwardInputsFromBatch(engine.model(), batch));
    return asLayerMaps(result.tensor(layer), layer, imageHeight(batch), imageWidth(batch));
}

} // namespace torchscope
