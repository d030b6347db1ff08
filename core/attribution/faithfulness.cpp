#include "attribution/faithfulness.h"

#include "attribution/attribution_names.h"
#include "attribution/baselines.h"
#include "attribution/input_attributions.h"
#include "attribution/road_imputation.h"
#include "common/error.h"
#include "common/strings.h"
#include "graph/engine.h"
#include "model/batch_limit.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace torchscope {
namespace {

at::Tensor filled(Fill fill, const at::Tensor& x, double blurSigma)
{
    switch (fill) {
    case Fill::Zero:
        return at::zeros_like(x);
    case Fill::Blur:
        return gaussianBlur(x, blurSigma > 0.0 ? blurSigma : defaultBlurSigma(x.size(2), x.size(3)));
    case Fill::Mean:
        return x.mean({2, 3}, true).expand_as(x).contiguous();
    }
    return at::zeros_like(x);
}

// One image's curve: the target's probability while the pixels, in `order`, go from `from` to
// `to` pixelsPerStep at a time (step 0: `from` itself, the last step: `to`).
std::vector<double> causalCurve(Engine& engine, const at::Tensor& from, const at::Tensor& to, const at::Tensor& order,
    int64_t target, const FaithfulnessRequest& request, int64_t pixelsPerStep, int64_t batch)
{
    const int64_t channels = from.size(1), pixels = from.size(2) * from.size(3);
    const int64_t steps = (pixels + pixelsPerStep - 1) / pixelsPerStep;
    // rank[p]: when pixel p changes (0 for the most important)
    const at::Tensor rank = at::empty({pixels}, at::kLong).scatter_(0, order, at::arange(pixels, at::kLong));
    const at::Tensor a = from.reshape({1, channels, pixels}).cpu(), b = to.reshape({1, channels, pixels}).cpu();
    std::vector<double> curve;
    for (int64_t first = 0; first <= steps; first += batch) {
        const int64_t count = std::min(batch, steps + 1 - first);
        const at::Tensor changed = at::arange(first, first + count, at::kLong).mul(pixelsPerStep).view({count, 1});
        const at::Tensor mask = (rank.view({1, pixels}) < changed).unsqueeze(1); // [count, 1, pixels]
        const at::Tensor images = at::where(mask, b, a).view({count, channels, from.size(2), from.size(3)});
        const at::Tensor scores = classScores(
            engine, images.to(from.device()), request.source, target, "deletion and insertion", /*probabilities=*/true)
                                      .contiguous();
        const auto* values = scores.data_ptr<float>();
        curve.insert(curve.end(), values, values + count);
    }
    return curve;
}

// One image's ROAD curve: the target's probability change when the pixels above each percentile
// (most or least relevant first) are imputed, the imputations drawn in percentile order.
std::vector<double> roadCurve(Engine& engine, const at::Tensor& x, const at::Tensor& importance, bool mostRelevantFirst,
    int64_t target, const FaithfulnessRequest& request, uint64_t seed, int64_t batch)
{
    at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(seed);
    std::vector<at::Tensor> imputed;
    for (double q : roadPercentiles())
        imputed.push_back(noisyLinearImputation(
            x[0].cpu(), roadKeepMask(importance, q, mostRelevantFirst), request.roadNoise, generator));
    const double before
        = classScores(engine, x, request.source, target, "ROAD", /*probabilities=*/true)[0].item<double>();
    std::vector<double> curve;
    for (size_t first = 0; first < imputed.size(); first += static_cast<size_t>(batch)) {
        const size_t count = std::min(imputed.size() - first, static_cast<size_t>(batch));
        const at::Tensor images
            = at::stack(std::vector<at::Tensor>(imputed.begin() + static_cast<std::ptrdiff_t>(first),
                imputed.begin() + static_cast<std::ptrdiff_t>(first + count)));
        const at::Tensor after
            = classScores(engine, images.to(x.device()), request.source, target, "ROAD", true).contiguous();
        for (size_t k = 0; k < count; ++k)
            curve.push_back(static_cast<double>(after[static_cast<int64_t>(k)].item<float>()) - before);
    }
    return curve;
}

double mean(const std::vector<double>& values)
{
    double sum = 0.0;
    for (double v : values)
        sum += v;
    return values.empty() ? std::numeric_limits<double>::quiet_NaN() : sum / static_cast<double>(values.size());
}

} // namespace

std::vector<std::string> faithfulnessMetrics()
{
    return namesOf(faithfulnessMetricChoices());
}

Fill parseFill(const std::string& name)
{
    if (name == "zero")
        return Fill::Zero;
    if (name == "blur")
        return Fill::Blur;
    if (name == "mean")
        return Fill::Mean;
    throw Error("unknown fill '" + name + "'; expected zero, blur or mean");
}

std::string fillName(Fill fill)
{
    return fill == Fill::Zero ? "zero" : fill == Fill::Blur ? "blur" : "mean";
}

at::Tensor pixelImportance(const at::Tensor& maps, int64_t height, int64_t width)
{
    if (maps.dim() != 4)
        throw Error("maps must be [N, C, H, W], got " + shapeToString(maps.sizes().vec()));
    at::Tensor summed = maps.to(at::kFloat).sum(1, true);
    if (summed.size(2) != height || summed.size(3) != width)
        summed = at::upsample_bilinear2d(summed, {height, width}, /*align_corners=*/false);
    return summed.squeeze(1);
}

double areaUnderCurve(const std::vector<double>& curve)
{
    if (curve.size() < 2)
        return std::numeric_limits<double>::quiet_NaN();
    double sum = 0.0;
    for (double v : curve)
        sum += v;
    return (sum - curve.front() / 2 - curve.back() / 2) / static_cast<double>(curve.size() - 1);
}

FaithfulnessResult evaluateFaithfulness(Engine& engine, const at::Tensor& images, const at::Tensor& maps,
    const std::vector<int64_t>& targets, const FaithfulnessRequest& request, const ProgressCallback& progress)
{
    const std::vector<std::string> known = faithfulnessMetrics();
    for (const auto& metric : request.metrics)
        if (std::find(known.begin(), known.end(), metric) == known.end())
            throw Error("unknown metric '" + metric + "'; expected " + join(known, ", "));
    if (images.dim() != 4 || images.size(0) == 0 || maps.dim() != 4 || maps.size(0) != images.size(0)
        || static_cast<int64_t>(targets.size()) != images.size(0))
        throw Error("faithfulness needs images [N, C, H, W], maps [N, K, h, w] and N targets; got "
            + shapeToString(images.sizes().vec()) + ", " + shapeToString(maps.sizes().vec()) + " and "
            + std::to_string(targets.size()) + " targets");
    const int64_t total = images.size(0), height = images.size(2), width = images.size(3);
    const int64_t pixels = height * width;
    const int64_t perStep = request.pixelsPerStep > 0 ? request.pixelsPerStep : (pixels + 99) / 100;
    const int64_t perSample = request.bytesPerSample > 0 ? request.bytesPerSample
                                                         : 16 * images[0].numel() * static_cast<int64_t>(sizeof(float));
    const int64_t batch
        = batchUnderCap(engine.model(), request.memoryBytes, perSample, (pixels + perStep - 1) / perStep + 1);
    const at::Tensor importance = pixelImportance(maps, height, width);
    const auto uses = [&](const char* metric) {
        return std::find(request.metrics.begin(), request.metrics.end(), metric) != request.metrics.end();
    };

    FaithfulnessResult result;
    result.pixelsPerStep = perStep;
    result.batch = static_cast<int>(batch);
    for (const auto& metric : request.metrics)
        result.metrics[metric].perImage.assign(static_cast<size_t>(total), std::numeric_limits<double>::quiet_NaN());
    for (int64_t i = 0; i < total; ++i) {
        if (progress && !progress(Progress{i, total, "images", {}})) {
            result.cancelled = true;
            break;
        }
        if (targets[static_cast<size_t>(i)] < 0)
            throw Error(
                "image " + std::to_string(i) + " has no class to explain; the metrics watch a class's probability");
        const at::Tensor x = images.narrow(0, i, 1).to(at::kFloat);
        const int64_t target = targets[static_cast<size_t>(i)];
        // Most important first; ties in pixel order (a stable sort).
        const at::Tensor order
            = std::get<1>(importance[i].reshape({pixels}).sort(/*stable=*/true, /*dim=*/0, /*descending=*/true));
        const auto keep = [&](const char* metric, std::vector<double> curve) {
            MetricValues& values = result.metrics[metric];
            values.perImage[static_cast<size_t>(i)] = areaUnderCurve(curve);
            values.curves.push_back(std::move(curve));
        };
        if (uses(Deletion))
            keep(Deletion,
                causalCurve(engine, x, filled(request.deletionFill, x, request.blurSigma), order, target, request,
                    perStep, batch));
        if (uses(Insertion))
            keep(Insertion,
                causalCurve(engine, filled(request.insertionStart, x, request.blurSigma), x, order, target, request,
                    perStep, batch));
        for (const bool most : {true, false}) {
            const char* metric = most ? RoadMorf : RoadLerf;
            if (!uses(metric))
                continue;
            std::vector<double> curve = roadCurve(
                engine, x, importance[i], most, target, request, request.seed + static_cast<uint64_t>(i), batch);
            MetricValues& values = result.metrics[metric];
            values.perImage[static_cast<size_t>(i)] = mean(curve);
            values.curves.push_back(std::move(curve));
        }
        if (uses(AverageDrop) || uses(IncreaseConfidence)) {
            // The map scaled to [0, 1] (a constant map: 0) multiplies every channel.
            const at::Tensor map = importance[i];
            const at::Tensor low = map.min(), range = map.max() - low;
            const at::Tensor scaled = range.item<double>() > 0 ? (map - low) / range : at::zeros_like(map);
            const at::Tensor both = at::cat({x, x * scaled.view({1, 1, height, width}).to(x.device())});
            const at::Tensor p = classScores(engine, both, request.source, target, "average drop", true);
            const double full = p[0].item<double>(), explained = p[1].item<double>();
            if (uses(AverageDrop))
                result.metrics[AverageDrop].perImage[static_cast<size_t>(i)]
                    = full > 0 ? std::max(0.0, full - explained) / full * 100.0 : 0.0;
            if (uses(IncreaseConfidence))
                result.metrics[IncreaseConfidence].perImage[static_cast<size_t>(i)] = explained > full ? 100.0 : 0.0;
        }
    }
    if (progress && !result.cancelled)
        progress(Progress{total, total, "images", {}});
    return result;
}

} // namespace torchscope
