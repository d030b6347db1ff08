#include "attribution/input_attributions.h"

#include "attribution/grad_cam.h"
#include "attribution/layer_cams.h"
#include "common/error.h"
#include "common/strings.h"
#include "graph/engine.h"
#include "graph/request.h"
#include "model/model.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

namespace torchscope {
namespace {

constexpr double Pi = 3.14159265358979323846;

// numpy.polynomial.legendre.leggauss: nodes ascending in [-1, 1] and their weights, by Newton's
// method on the Legendre polynomial from Chebyshev starting points.
IntegrationPoints legendreGauss(int n)
{
    IntegrationPoints points;
    points.alphas.resize(static_cast<size_t>(n));
    points.weights.resize(static_cast<size_t>(n));
    for (int i = 0; i < (n + 1) / 2; ++i) {
        double x = std::cos(Pi * (i + 0.75) / (n + 0.5));
        double derivative = 0.0;
        for (int iteration = 0; iteration < 100; ++iteration) {
            double p0 = 1.0, p1 = x;
            for (int k = 2; k <= n; ++k) {
                const double p2 = ((2.0 * k - 1.0) * x * p1 - (k - 1.0) * p0) / k;
                p0 = p1;
                p1 = p2;
            }
            const double pn = n == 1 ? x : p1;
            const double pm = n == 1 ? 1.0 : p0;
            derivative = n * (x * pn - pm) / (x * x - 1.0);
            const double step = pn / derivative;
            x -= step;
            if (std::abs(step) < 1e-16)
                break;
        }
        const double weight = 2.0 / ((1.0 - x * x) * derivative * derivative);
        // x is the i-th largest root: mirror it for the ascending order numpy gives.
        points.alphas[static_cast<size_t>(n - 1 - i)] = x;
        points.alphas[static_cast<size_t>(i)] = -x;
        points.weights[static_cast<size_t>(n - 1 - i)] = weight;
        points.weights[static_cast<size_t>(i)] = weight;
    }
    return points;
}

std::vector<double> linspace(double first, double last, int n)
{
    std::vector<double> values(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i)
        values[static_cast<size_t>(i)] = n == 1 ? first : first + (last - first) * i / (n - 1);
    return values;
}

// The target score of one image [1, ...] and d score / d input for a batch evaluated together.
struct Gradients {
    at::Tensor input; // [B, C, H, W]
    int64_t target = 0;
    std::string description;
    double score = 0.0; // the target's score, summed over the batch
};

Gradients gradientsOf(Engine& engine, const at::Tensor& batch, const InputAttributionRequest& request, int64_t target)
{
    Request run;
    run.inputGradient = true;
    run.targetClass = target;
    run.targetRegion = request.target.region;
    run.scores = request.scores;
    run.labels = request.labels;
    const RunResult result = engine.run(run, forwardInputsFromBatch(engine.model(), batch));
    Gradients out;
    out.input = result.tensor("input:grad").to(at::kFloat);
    out.target = result.targetIndex;
    out.description = result.target;
    const ScoreOutput scores = findScores(*result.find("output"), request.scores);
    if (scores.kind == OutputKind::Classes)
        out.score = scores.scores.select(1, out.target).sum().item<double>();
    return out;
}

// The target class's score of each input of a batch, without gradients.
at::Tensor scoresOf(Engine& engine, const at::Tensor& batch, const InputAttributionRequest& request, int64_t target)
{
    const at::NoGradGuard noGrad;
    Request run;
    run.scores = request.scores;
    const RunResult result = engine.run(run, forwardInputsFromBatch(engine.model(), batch));
    const ScoreOutput scores = findScores(*result.find("output"), request.scores);
    if (scores.kind != OutputKind::Classes)
        throw Error("occlusion explains class scores [N, classes]; this model's output is " + scores.described);
    return scores.scores.select(1, target).to(at::kFloat).cpu();
}

// Captum's Occlusion for one image [1, C, H, W]: windows enumerated with the row offset changing
// fastest, as Captum numbers them, so that each value's sum of score drops adds up in its order.
at::Tensor occlusionOf(
    Engine& engine, const at::Tensor& x, const InputAttributionRequest& request, int64_t target, int64_t batch)
{
    const int64_t height = x.size(2), width = x.size(3);
    const int64_t window = request.window, stride = request.stride;
    if (window < 1 || stride < 1 || window > std::min(height, width)
        || (stride > window && (height > window || width > window)))
        throw Error("occlusion needs 1 <= --stride <= --window <= the input's size (" + std::to_string(height) + " x "
            + std::to_string(width) + "), got window " + std::to_string(window) + ", stride " + std::to_string(stride));
    const auto shifts = [&](int64_t size) { return (size - window + stride - 1) / stride + 1; };
    std::vector<std::pair<int64_t, int64_t>> origins; // (row, column)
    for (int64_t column = 0; column < shifts(width); ++column)
        for (int64_t row = 0; row < shifts(height); ++row)
            origins.emplace_back(row * stride, column * stride);
    const float initial = scoresOf(engine, x, request, target)[0].item<float>();
    at::Tensor total = at::zeros({1, x.size(1), height, width}, at::kFloat);
    at::Tensor covered = at::zeros_like(total);
    for (size_t first = 0; first < origins.size(); first += static_cast<size_t>(batch)) {
        const size_t count = std::min(origins.size() - first, static_cast<size_t>(batch));
        at::Tensor occluded = x.repeat({static_cast<int64_t>(count), 1, 1, 1});
        for (size_t k = 0; k < count; ++k) {
            const auto [row, column] = origins[first + k];
            occluded[static_cast<int64_t>(k)]
                .narrow(1, row, std::min(window, height - row))
                .narrow(2, column, std::min(window, width - column))
                .zero_();
        }
        const at::Tensor scores = scoresOf(engine, occluded, request, target);
        for (size_t k = 0; k < count; ++k) {
            const auto [row, column] = origins[first + k];
            const float drop = initial - scores[static_cast<int64_t>(k)].item<float>();
            const int64_t rows = std::min(window, height - row), columns = std::min(window, width - column);
            total.narrow(2, row, rows).narrow(3, column, columns).add_(drop);
            covered.narrow(2, row, rows).narrow(3, column, columns).add_(1.0f);
        }
    }
    return total / covered;
}

// The layer's output for one image and the target score's gradient there, as [1, C, h, w] maps
// (vision transformer tokens as their patch grid).
std::pair<at::Tensor, at::Tensor> layerGradients(
    Engine& engine, const at::Tensor& x, const InputAttributionRequest& request, int64_t target)
{
    Request run;
    run.grabs = {GrabSpec{request.layer, CaptureKind::Output, 0}, GrabSpec{request.layer, CaptureKind::Gradient, 0}};
    run.targetClass = target;
    run.targetRegion = request.target.region;
    run.scores = request.scores;
    const RunResult result = engine.run(run, forwardInputsFromBatch(engine.model(), x));
    const auto maps = [&](const at::Tensor& value) {
        if (value.dim() == 4)
            return value.detach().to(at::kFloat);
        if (at::Tensor tokens = value.dim() == 3 ? tokensAsMaps(value.detach().to(at::kFloat)) : at::Tensor();
            tokens.defined())
            return tokens;
        throw Error("a CAM needs a layer with [batch, channels, height, width] output or vision transformer tokens; '"
            + request.layer + "' gives " + shapeToString(value.sizes().vec()));
    };
    return {maps(result.tensor(request.layer)), maps(result.tensor(request.layer + ":grad"))};
}

// Score-CAM (Wang et al. 2020) as pytorch-grad-cam computes it: each channel of the layer,
// upsampled to the input (bilinear, corners aligned), scaled to [0, 1], masks the input; the
// softmax over channels of the masked inputs' target scores weighs the channels.
at::Tensor scoreCamOf(Engine& engine, const at::Tensor& x, const at::Tensor& activations,
    const InputAttributionRequest& request, int64_t target, int64_t batch)
{
    const at::NoGradGuard noGrad;
    const int64_t channels = activations.size(1);
    at::Tensor masks = at::upsample_bilinear2d(activations, {x.size(2), x.size(3)}, /*align_corners=*/true);
    const at::Tensor flat = masks.view({1, channels, -1});
    const at::Tensor highs = std::get<0>(flat.max(-1)).view({1, channels, 1, 1});
    const at::Tensor lows = std::get<0>(flat.min(-1)).view({1, channels, 1, 1});
    masks = (masks - lows) / (highs - lows + 1e-8);
    const at::Tensor masked = (x.unsqueeze(1) * masks.unsqueeze(2)).squeeze(0); // [C, Cin, H, W]
    std::vector<at::Tensor> scores;
    for (int64_t first = 0; first < channels; first += batch)
        scores.push_back(scoresOf(engine, masked.narrow(0, first, std::min(batch, channels - first)), request, target));
    const at::Tensor weights = at::softmax(at::cat(scores), 0).view({1, channels, 1, 1});
    return at::relu((weights * activations).sum(1, true));
}

} // namespace

IntegrationRule parseIntegrationRule(const std::string& name)
{
    for (auto rule : {IntegrationRule::RiemannLeft, IntegrationRule::RiemannRight, IntegrationRule::RiemannMiddle,
             IntegrationRule::RiemannTrapezoid, IntegrationRule::GaussLegendre})
        if (integrationRuleName(rule) == name)
            return rule;
    throw Error("unknown integration rule '" + name
        + "'; expected gausslegendre, riemann_left, riemann_right, riemann_middle or riemann_trapezoid");
}

std::string integrationRuleName(IntegrationRule rule)
{
    switch (rule) {
    case IntegrationRule::RiemannLeft:
        return "riemann_left";
    case IntegrationRule::RiemannRight:
        return "riemann_right";
    case IntegrationRule::RiemannMiddle:
        return "riemann_middle";
    case IntegrationRule::RiemannTrapezoid:
        return "riemann_trapezoid";
    case IntegrationRule::GaussLegendre:
        return "gausslegendre";
    }
    return "gausslegendre";
}

IntegrationPoints integrationPoints(IntegrationRule rule, int n)
{
    if (n < 1 || (rule == IntegrationRule::RiemannTrapezoid && n < 2))
        throw Error("Integrated Gradients needs at least " + std::string(n < 1 ? "1 step" : "2 steps for the trapezoid")
            + ", got " + std::to_string(n));
    if (rule == IntegrationRule::GaussLegendre) {
        IntegrationPoints points = legendreGauss(n);
        for (size_t i = 0; i < points.alphas.size(); ++i) {
            points.alphas[i] = 0.5 * (1.0 + points.alphas[i]);
            points.weights[i] = 0.5 * points.weights[i];
        }
        return points;
    }
    IntegrationPoints points;
    points.weights.assign(static_cast<size_t>(n), 1.0 / n);
    switch (rule) {
    case IntegrationRule::RiemannTrapezoid:
        points.weights.front() /= 2;
        points.weights.back() /= 2;
        points.alphas = linspace(0.0, 1.0, n);
        break;
    case IntegrationRule::RiemannLeft:
        points.alphas = linspace(0.0, 1.0 - 1.0 / n, n);
        break;
    case IntegrationRule::RiemannMiddle:
        points.alphas = linspace(1.0 / (2.0 * n), 1.0 - 1.0 / (2.0 * n), n);
        break;
    default:
        points.alphas = linspace(1.0 / n, 1.0, n);
        break;
    }
    return points;
}

std::vector<std::string> inputAttributionMethods()
{
    std::vector<std::string> methods{Saliency, InputXGradient, IntegratedGradients, Occlusion};
    for (const auto& cam : gradientCamMethods())
        methods.push_back(cam);
    methods.push_back(ScoreCam);
    return methods;
}

int64_t evaluationBytesPerSample(Model& model, const at::Tensor& oneSample)
{
    const auto hasShapes = [&] {
        for (const auto& m : model.modules())
            if (!m.outputShapes.empty())
                return true;
        return false;
    };
    if (!hasShapes())
        dryRun(model, forwardInputsFromBatch(model, oneSample));
    int64_t values = oneSample.numel();
    for (const auto& m : model.modules())
        if (!m.path.empty()) // the root's output is counted by its last module's
            for (const auto& shape : m.outputShapes) {
                int64_t n = 1;
                for (size_t d = 1; d < shape.size(); ++d) // without the batch dimension
                    n *= std::max<int64_t>(1, shape[d]);
                values += n;
            }
    return 2 * values * static_cast<int64_t>(sizeof(float));
}

InputAttributionResult attributeInputs(
    Engine& engine, const at::Tensor& images, const InputAttributionRequest& request, const ProgressCallback& progress)
{
    if (images.dim() != 4)
        throw Error(
            "input attributions need a batch of images [N, C, H, W], got " + shapeToString(images.sizes().vec()));
    for (const auto& method : request.methods)
        if (method != Saliency && method != InputXGradient && method != IntegratedGradients && method != Occlusion
            && method != ScoreCam && !isGradientCam(method))
            throw Error("unknown attribution method '" + method
                + "'; expected saliency, input_x_gradient, integrated_gradients, occlusion, grad_cam, grad_cam_pp, "
                  "hires_cam, xgrad_cam, layer_cam or score_cam");
    const auto isCam = [](const std::string& method) { return isGradientCam(method) || method == ScoreCam; };
    const bool cams = std::any_of(request.methods.begin(), request.methods.end(), isCam);
    if (cams && request.layer.empty())
        throw Error("the CAMs (grad_cam, grad_cam_pp, hires_cam, xgrad_cam, layer_cam, score_cam) need --layer");
    const bool integrated
        = std::find(request.methods.begin(), request.methods.end(), IntegratedGradients) != request.methods.end();
    const IntegrationPoints points = integrated ? integrationPoints(request.rule, request.steps) : IntegrationPoints{};
    const int64_t perSample = request.bytesPerSample > 0 ? request.bytesPerSample
                                                         : 64 * images[0].numel() * static_cast<int64_t>(sizeof(float));
    const bool occlusion = std::find(request.methods.begin(), request.methods.end(), Occlusion) != request.methods.end()
        || std::find(request.methods.begin(), request.methods.end(), ScoreCam) != request.methods.end();
    const auto batch = static_cast<int64_t>(std::clamp<int64_t>(request.memoryBytes / std::max<int64_t>(1, perSample),
        1, std::max<int64_t>({int64_t{1}, static_cast<int64_t>(points.alphas.size()), occlusion ? int64_t{4096} : 1})));

    InputAttributionResult result;
    result.batch = static_cast<int>(batch);
    std::map<std::string, std::vector<at::Tensor>> maps;
    const auto total = images.size(0);
    for (int64_t i = 0; i < total; ++i) {
        if (progress && !progress(Progress{i, total, "images", {}})) {
            result.cancelled = true;
            break;
        }
        const at::Tensor x = images.narrow(0, i, 1).to(at::kFloat);
        const Gradients atX = gradientsOf(engine, x, request, request.target.index);
        result.targets.push_back(atX.target);
        result.targetDescriptions.push_back(atX.description);
        for (const auto& method : request.methods) {
            if (method == Saliency)
                maps[method].push_back(atX.input.abs().cpu());
            else if (method == InputXGradient)
                maps[method].push_back((x * atX.input).cpu());
            else if (method == Occlusion)
                maps[method].push_back(occlusionOf(engine, x, request, atX.target, batch));
        }
        if (cams) {
            const auto [activations, gradients] = layerGradients(engine, x, request, atX.target);
            for (const auto& method : request.methods)
                if (isCam(method)) {
                    const at::Tensor cam = method == ScoreCam
                        ? scoreCamOf(engine, x, activations, request, atX.target, batch)
                        : gradientCam(method, activations, gradients);
                    maps[method].push_back(cam.cpu());
                    maps[method + ":input"].push_back(
                        at::upsample_bilinear2d(cam, {x.size(2), x.size(3)}, /*align_corners=*/false).cpu());
                }
        }
        if (!integrated)
            continue;
        // Baseline: zeros. The path's points in batches under the cap; each step's gradient weighted
        // as Captum weights it, summed in step order.
        at::Tensor sum = at::zeros_like(x);
        const auto steps = static_cast<int64_t>(points.alphas.size());
        for (int64_t first = 0; first < steps; first += batch) {
            const int64_t count = std::min(batch, steps - first);
            const at::Tensor alphas = at::tensor(
                std::vector<double>(points.alphas.begin() + first, points.alphas.begin() + first + count), at::kDouble)
                                          .to(at::kFloat)
                                          .view({count, 1, 1, 1});
            const at::Tensor scaled = (alphas * x.expand({count, -1, -1, -1})).to(x.device());
            const at::Tensor gradients = gradientsOf(engine, scaled, request, atX.target).input;
            for (int64_t k = 0; k < count; ++k)
                sum += gradients[k].unsqueeze(0) * static_cast<float>(points.weights[static_cast<size_t>(first + k)]);
        }
        const at::Tensor attribution = sum * x;
        maps[IntegratedGradients].push_back(attribution.cpu());
        const double atBaseline = gradientsOf(engine, at::zeros_like(x), request, atX.target).score;
        result.integratedGradientsDelta.push_back(attribution.sum().item<double>() - (atX.score - atBaseline));
    }
    if (progress && !result.cancelled)
        progress(Progress{total, total, "images", {}});
    for (auto& [method, parts] : maps)
        result.maps[method] = at::cat(parts);
    return result;
}

} // namespace torchscope
