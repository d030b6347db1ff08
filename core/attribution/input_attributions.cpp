#include "attribution/input_attributions.h"

#include "attribution/attribution_names.h"
#include "attribution/grad_cam.h"
#include "attribution/layer_cams.h"
#include "attribution/model_scores.h"
#include "attribution/perturbation_attributions.h"
#include "common/error.h"
#include "common/strings.h"
#include "graph/engine.h"
#include "model/batch_limit.h"
#include "model/model.h"
#include "relevance/input_relevance.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>

namespace torchscope {
namespace {

// LRP conserves relevance up to what biases and stabilisers take or add (EpsilonPlusFlat on the demo: a
// sum of −0.80 for a logit of −0.42, as Zennit's): a sum more than twice the logit's size away from it
// says a rule does not hold on this model (an op no rule covers).
std::string relevanceFarFromTheLogit(double sum, double logit, int64_t image)
{
    if (std::abs(sum - logit) <= 2.0 * std::abs(logit))
        return {};
    std::ostringstream out;
    out << "image " << image << ": the input relevance sums to " << sum << ", far from the logit " << logit
        << " it explains; an op between the layers may take a rule that does not conserve relevance (see the "
           "rules applied)";
    return out.str();
}

struct PathIntegral {
    at::Tensor attribution; // [1, C, H, W]
    double delta = 0.0; // completeness error
};

// Integrated Gradients from `baseline` to x as Captum computes it: the path's points
// baseline + alpha (x - baseline) in batches under the cap, each point's gradient weighted by its
// rule's weight and summed in step order, times (x - baseline).
PathIntegral integrate(Engine& engine, const at::Tensor& x, const at::Tensor& baseline, const ScoreSource& source,
    int64_t target, double scoreAtX, const IntegrationPoints& points, int64_t batch)
{
    const at::Tensor difference = x - baseline;
    at::Tensor sum = at::zeros_like(x);
    const auto steps = static_cast<int64_t>(points.alphas.size());
    for (int64_t first = 0; first < steps; first += batch) {
        const int64_t count = std::min(batch, steps - first);
        const at::Tensor alphas = at::tensor(
            std::vector<double>(points.alphas.begin() + first, points.alphas.begin() + first + count), at::kDouble)
                                      .to(at::kFloat)
                                      .view({count, 1, 1, 1})
                                      .to(x.device());
        const at::Tensor scaled
            = baseline.expand({count, -1, -1, -1}) + alphas * difference.expand({count, -1, -1, -1});
        const at::Tensor gradients = inputGradients(engine, scaled, source, target).input;
        for (int64_t k = 0; k < count; ++k)
            sum += gradients[k].unsqueeze(0) * static_cast<float>(points.weights[static_cast<size_t>(first + k)]);
    }
    PathIntegral out;
    out.attribution = sum * difference;
    const double atBaseline = inputGradients(engine, baseline, source, target).score;
    out.delta = out.attribution.sum().item<double>() - (scoreAtX - atBaseline);
    return out;
}

} // namespace

std::vector<std::string> attributionMethods()
{
    return namesOf(attributionMethodChoices());
}

bool isLayerMethod(const std::string& method)
{
    return isGradientCam(method) || method == ScoreCam || method == EigenCam;
}

const at::Tensor* inputSizedMap(const std::map<std::string, at::Tensor>& maps, const std::string& method)
{
    auto found = maps.find(method + ":input");
    if (found == maps.end())
        found = maps.find(method);
    return found == maps.end() ? nullptr : &found->second;
}

ScoreSource scoreSourceOf(const InputAttributionRequest& request)
{
    return ScoreSource{request.scores, request.target.region, request.labels, request.probe};
}

int64_t evaluationBytesPerSample(Model& model, const at::Tensor& oneSample)
{
    if (const int64_t recorded = recordedBytesPerSample(model, oneSample.numel()); recorded > 0)
        return recorded;
    dryRun(model, forwardInputsFromBatch(model, oneSample));
    return recordedBytesPerSample(model, oneSample.numel());
}

InputAttributionResult attributeInputs(
    Engine& engine, const at::Tensor& images, const InputAttributionRequest& request, const ProgressCallback& progress)
{
    if (images.dim() != 4 || images.size(0) == 0)
        throw Error(
            "attributions need a batch of images [N, C, H, W], N >= 1, got " + shapeToString(images.sizes().vec()));
    const std::vector<std::string> known = attributionMethods();
    for (const auto& method : request.methods)
        if (std::find(known.begin(), known.end(), method) == known.end())
            throw Error("unknown attribution method '" + method + "'; expected " + join(known, ", "));
    const std::vector<std::string>& methods = request.methods;
    const bool cams = std::any_of(methods.begin(), methods.end(), isLayerMethod);
    if (cams && request.layer.empty())
        throw Error("the CAMs (grad_cam, grad_cam_pp, hires_cam, xgrad_cam, layer_cam, score_cam, eigen_cam) need "
                    "--layer");
    const bool integrated = contains(methods, IntegratedGradients);
    const bool noisy
        = contains(methods, SmoothGrad) || contains(methods, SmoothGradSquared) || contains(methods, VarGrad);
    // Which passes the methods need: the input's gradient, the layer's gradient, or neither (the
    // target is then the prediction, from a pass without gradients).
    const bool inputGradient = contains(methods, Saliency) || contains(methods, InputXGradient) || integrated || noisy;
    const bool layerGradient = std::any_of(methods.begin(), methods.end(), isGradientCam);
    const IntegrationPoints points = integrated ? integrationPoints(request.rule, request.steps) : IntegrationPoints{};
    const int64_t perSample = request.bytesPerSample > 0 ? request.bytesPerSample
                                                         : 64 * images[0].numel() * static_cast<int64_t>(sizeof(float));
    const int64_t useful
        = std::max<int64_t>({static_cast<int64_t>(points.alphas.size()), noisy ? int64_t{request.noise.samples} : 1,
            contains(methods, Occlusion) || contains(methods, ScoreCam) ? int64_t{4096} : 1});
    // A model taking List[Tensor] (detection) hands back the first image's input gradient only:
    // its path points and noisy copies go one at a time.
    const auto& arguments = engine.model().forwardArguments();
    const bool listInput = !arguments.empty() && arguments[0].type == "List[Tensor]";
    const int64_t batch = listInput ? 1 : batchUnderCap(engine.model(), request.memoryBytes, perSample, useful);
    const ScoreSource source = scoreSourceOf(request);

    InputAttributionResult result;
    result.batch = static_cast<int>(batch);
    std::map<std::string, std::vector<at::Tensor>> maps;
    std::vector<at::Tensor> baselines;
    const auto total = images.size(0);
    for (int64_t i = 0; i < total; ++i) {
        if (progress && !progress(Progress{i, total, "images", {}})) {
            result.cancelled = true;
            break;
        }
        const at::Tensor x = images.narrow(0, i, 1).to(at::kFloat);
        const int64_t wanted
            = request.targets.empty() ? request.target.index : request.targets.at(static_cast<size_t>(i));
        InputGradients atX;
        LayerGradients layer;
        std::optional<InputRelevance> relevance;
        if (inputGradient) {
            atX = inputGradients(engine, x, source, wanted);
        } else if (contains(methods, Lrp)) { // its own pass finds the target
            relevance = inputRelevance(engine, x, source, wanted, request.relevance);
            atX.target = relevance->target;
            atX.description = relevance->description;
        } else if (layerGradient) {
            layer = layerGradients(engine, x, source, request.layer, wanted);
            atX.target = layer.target;
            atX.description = layer.description;
        } else { // occlusion, Score-CAM, EigenCAM: the prediction, when there is one, names the image
            atX.target = wanted >= 0 ? wanted : predictedClasses(engine, x, source)[0].item<int64_t>();
            atX.description = atX.target >= 0 ? describeClass(atX.target, source) : "no class (EigenCAM needs none)";
        }
        result.targets.push_back(atX.target);
        result.targetDescriptions.push_back(atX.description);
        if (contains(methods, Lrp)) {
            if (!relevance)
                relevance = inputRelevance(engine, x, source, atX.target, request.relevance);
            maps[Lrp].push_back(relevance->relevance.cpu());
            result.relevanceSums.push_back(relevance->relevance.sum().item<double>());
            result.relevanceScores.push_back(relevance->score);
            if (const std::string far = relevanceFarFromTheLogit(result.relevanceSums.back(), relevance->score, i);
                !far.empty())
                result.warnings.push_back(far);
            result.relevance = relevance->coverage;
        }
        if (contains(methods, Saliency))
            maps[Saliency].push_back(atX.input.abs().cpu());
        if (contains(methods, InputXGradient))
            maps[InputXGradient].push_back((x * atX.input).cpu());
        if (noisy) {
            const SmoothGradients smooth = smoothGradients(engine, x, i, source, atX.target, request.noise, batch);
            if (contains(methods, SmoothGrad))
                maps[SmoothGrad].push_back(smooth.mean.cpu());
            if (contains(methods, SmoothGradSquared))
                maps[SmoothGradSquared].push_back(smooth.meanOfSquares.cpu());
            if (contains(methods, VarGrad))
                maps[VarGrad].push_back(smooth.variance().cpu());
        }
        if (contains(methods, Occlusion))
            maps[Occlusion].push_back(
                occlusion(engine, x, source, atX.target, request.window, request.stride, batch).cpu());
        if (cams) {
            if (layerGradient && !layer.gradients.defined())
                layer = layerGradients(engine, x, source, request.layer, atX.target);
            else if (!layerGradient)
                layer.activations = layerActivations(engine, x, request.layer);
            for (const auto& method : methods) {
                if (!isLayerMethod(method))
                    continue;
                const at::Tensor cam = method == ScoreCam
                    ? scoreCam(engine, x, layer.activations, source, atX.target, batch)
                    : method == EigenCam ? eigenCam(layer.activations)
                                         : gradientCam(method, layer.activations, layer.gradients);
                maps[method].push_back(cam.cpu());
                maps[method + ":input"].push_back(
                    at::upsample_bilinear2d(cam, {x.size(2), x.size(3)}, /*align_corners=*/false).cpu());
            }
        }
        if (integrated) {
            const at::Tensor baseline = baselineOf(request.baseline, x, i).to(x.device());
            const PathIntegral path = integrate(engine, x, baseline, source, atX.target, atX.score, points, batch);
            maps[IntegratedGradients].push_back(path.attribution.cpu());
            result.integratedGradientsDelta.push_back(path.delta);
            if (request.baseline.kind != BaselineKind::Black)
                baselines.push_back(baseline.cpu());
        }
    }
    if (progress && !result.cancelled)
        progress(Progress{total, total, "images", {}});
    for (auto& [method, parts] : maps)
        result.maps[method] = at::cat(parts);
    if (!baselines.empty())
        result.integratedGradientsBaselines = at::cat(baselines);
    return result;
}

} // namespace torchscope
