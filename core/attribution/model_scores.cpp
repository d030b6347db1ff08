#include "attribution/model_scores.h"

#include "attribution/grad_cam.h"
#include "common/error.h"
#include "common/strings.h"
#include "graph/engine.h"
#include "graph/model_output.h"
#include "graph/request.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

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

} // namespace

InputGradients inputGradients(Engine& engine, const at::Tensor& batch, const ScoreSource& source, int64_t target)
{
    Request run = scoring(source, target);
    run.inputGradient = true;
    const RunResult result = engine.run(run, forwardInputsFromBatch(engine.model(), batch));
    InputGradients out;
    out.input = result.tensor("input:grad").to(at::kFloat);
    out.target = result.targetIndex;
    out.description = result.target;
    const ScoreOutput scores = findScores(*result.find("output"), source.scores);
    if (scores.kind == OutputKind::Classes)
        out.score = scores.scores.select(1, out.target).sum().item<double>();
    return out;
}

at::Tensor classScores(Engine& engine, const at::Tensor& batch, const ScoreSource& source, int64_t target,
    const std::string& purpose, bool probabilities)
{
    const c10::InferenceMode inference; // no autograd bookkeeping: these inputs are many
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
    if (target < 0)
        return "no class";
    std::string text = "class " + std::to_string(target);
    if (target < static_cast<int64_t>(source.labels.size()))
        text += " (" + source.labels[static_cast<size_t>(target)] + ")";
    return text;
}

at::Tensor asLayerMaps(const at::Tensor& value, const std::string& layer)
{
    if (value.dim() == 4)
        return value.detach().to(at::kFloat);
    if (at::Tensor tokens = value.dim() == 3 ? tokensAsMaps(value.detach().to(at::kFloat)) : at::Tensor();
        tokens.defined())
        return tokens;
    throw Error("a CAM needs a layer with [batch, channels, height, width] output or vision transformer tokens; '"
        + layer + "' gives " + shapeToString(value.sizes().vec()));
}

LayerGradients layerGradients(
    Engine& engine, const at::Tensor& batch, const ScoreSource& source, const std::string& layer, int64_t target)
{
    Request run = scoring(source, target);
    run.grabs = {GrabSpec{layer, CaptureKind::Output, 0}, GrabSpec{layer, CaptureKind::Gradient, 0}};
    const RunResult result = engine.run(run, forwardInputsFromBatch(engine.model(), batch));
    return {asLayerMaps(result.tensor(layer), layer), asLayerMaps(result.tensor(layer + ":grad"), layer),
        result.targetIndex, result.target};
}

at::Tensor layerActivations(Engine& engine, const at::Tensor& batch, const std::string& layer)
{
    const at::NoGradGuard noGrad;
    Request run;
    run.grabs = {GrabSpec{layer, CaptureKind::Output, 0}};
    const RunResult result = engine.run(run, forwardInputsFromBatch(engine.model(), batch));
    return asLayerMaps(result.tensor(layer), layer);
}

} // namespace torchscope
