#include "attribution/attribution_workbench.h"

#include "attribution/faithfulness.h"
#include "attribution/input_attributions.h"
#include "attribution/sanity_checks.h"
#include "common/cancel_scope.h"
#include "common/error.h"
#include "common/finite_summary.h"
#include "common/strings.h"
#include "common/tensor_conversion.h"
#include "export/manifest.h"
#include "export/write_tensors.h"
#include "graph/engine.h"
#include "imaging/same_size_images.h"
#include "model/model.h"
#include "preprocess/preprocess_tensor.h"
#include "relevance/input_relevance.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <tuple>

namespace torchscope {
namespace {

WorkbenchMetricSummary summarise(const MetricValues& values)
{
    WorkbenchMetricSummary s;
    const FiniteSummary finite = summariseFinite(values.perImage);
    s.mean = finite.mean;
    s.sd = finite.sd;
    if (!values.curves.empty()) {
        s.meanCurve.assign(values.curves.front().size(), 0.0);
        for (const auto& curve : values.curves)
            for (size_t k = 0; k < curve.size() && k < s.meanCurve.size(); ++k)
                s.meanCurve[k] += curve[k] / static_cast<double>(values.curves.size());
    }
    return s;
}

} // namespace

InputAttributionRequest inputAttributionRequest(const AttributionWorkbenchRequest& request)
{
    InputAttributionRequest out;
    out.methods = request.methods;
    std::sort(out.methods.begin(), out.methods.end());
    out.methods.erase(std::unique(out.methods.begin(), out.methods.end()), out.methods.end());
    out.target.index = request.targetClass;
    out.scores = request.setup.scores;
    out.labels = request.setup.labels;
    out.steps = request.steps;
    out.rule = parseIntegrationRule(request.rule);
    out.baseline.kind = parseBaselineKind(request.baseline);
    out.baseline.blurSigma = request.blurSigma;
    out.baseline.seed = request.seed;
    out.noise = NoiseSettings{request.samples, request.noise, request.seed};
    out.window = request.window;
    out.stride = request.stride;
    out.layer = request.layer;
    out.relevance.composite = request.composite;
    out.relevance.attention = request.attentionRule;
    for (const auto& rule : request.relevanceRules)
        out.relevance.overrides.push_back(RuleOverride::parse(rule));
    std::tie(out.relevance.low, out.relevance.high) = inputRange(request.setup.preprocessing);
    out.memoryBytes = request.memoryBytes;
    return out;
}

FaithfulnessRequest faithfulnessRequest(
    const AttributionWorkbenchRequest& request, const InputAttributionRequest& attribution)
{
    FaithfulnessRequest out;
    out.metrics = request.metrics;
    out.source = scoreSourceOf(attribution);
    out.pixelsPerStep = request.pixelsPerStep;
    if (!request.fill.empty())
        out.deletionFill = out.insertionStart = parseFill(request.fill);
    out.blurSigma = request.blurSigma;
    out.seed = request.seed;
    out.memoryBytes = request.memoryBytes;
    return out;
}

AttributionWorkbenchResult runAttributionWorkbench(Engine& engine, const std::shared_ptr<Model>& scratch,
    const AttributionWorkbenchRequest& request, const AttributionWorkbenchReports& reports)
{
    if (request.methods.empty())
        throw Error("tick at least one attribution method");
    if (!request.sanityMode.empty() && !scratch)
        throw Error("the sanity check needs a second copy of the model");
    AttributionWorkbenchResult result;
    result.methods = request.methods;
    result.sanityMode = request.sanityMode;
    SameSizeImages loaded = loadSameSizeImages(request.images, request.setup.preprocessing,
        "the maps are compared across images: give the Input Setup a resize",
        "the attribution workbench needs at least one image");
    result.failures = std::move(loaded.failures);
    const at::Tensor& images = loaded.batch;
    const InputAttributionRequest attribution = inputAttributionRequest(request);
    if (attribution.baseline.kind == BaselineKind::Image)
        throw Error("the window's baselines are black, blur and noise; a user's image is the CLI's --baseline FILE");
    const FaithfulnessRequest faithfulness = faithfulnessRequest(request, attribution);
    result.measures.model = engine.model().path();
    result.measures.seed = request.seed;

    const CancelScope scope(reports.cancelled);
    const int64_t count = images.size(0);
    const auto methods = static_cast<int64_t>(attribution.methods.size());
    // Each image: every method's map, then (when asked) every method's metrics.
    const int64_t perImage = methods * (request.metrics.empty() ? 1 : 2);
    const int64_t total = count * perImage + (request.sanityMode.empty() ? 0 : count);
    // A part of the job as the whole's progress: `base` units done before it, `weight` in it.
    const auto part = [&](int64_t base, int64_t weight, const std::string& stage) -> ProgressCallback {
        if (!reports.progress)
            return {};
        return [=, &reports](const Progress& p) {
            const int64_t done = base * 1000 + weight * 1000 * p.done / std::max<int64_t>(1, p.total);
            return reports.progress(Progress{done, total * 1000, stage, {}});
        };
    };
    std::map<std::string, FaithfulnessResult> scored; // method -> every image's metrics so far
    for (int64_t k = 0; k < count && !result.cancelled; ++k) {
        // Image k alone, with the draws it has in the whole batch: the seed plus its index; one
        // method at a time, so that the progress moves between them (each finds the target again:
        // one pass beside a method's many).
        const at::Tensor x = images.narrow(0, k, 1);
        WorkbenchImageResult done;
        done.index = result.images.size();
        done.image.target = -1;
        std::map<std::string, at::Tensor> maps; // method -> [1, K, H, W] at the input's size
        int64_t stage = k * perImage;
        for (const auto& method : attribution.methods) {
            InputAttributionRequest one = attribution;
            one.methods = {method};
            one.noise.seed += static_cast<uint64_t>(k);
            one.baseline.seed += static_cast<uint64_t>(k);
            InputAttributionResult made;
            try {
                made = attributeInputs(engine, x, one, part(stage++, 1, "attributions: " + method));
            } catch (const Cancelled&) {
                made.cancelled = true;
            }
            if (made.cancelled || made.targets.empty()) {
                result.cancelled = true; // the image in progress is left out
                break;
            }
            maps[method] = *inputSizedMap(made.maps, method);
            if (done.image.target < 0) { // a class, where a method has one (EigenCAM alone has none)
                done.image.target = made.targets[0];
                done.image.targetDescription = made.targetDescriptions[0];
            }
        }
        if (result.cancelled)
            break;
        done.image.image = loaded.paths[static_cast<size_t>(k)];
        done.image.picture = std::move(loaded.pictures[static_cast<size_t>(k)]);
        const std::vector<int64_t> target{done.image.target};
        FaithfulnessRequest oneScored = faithfulness;
        oneScored.seed += static_cast<uint64_t>(k);
        for (const auto& method : request.methods) {
            const at::Tensor importance
                = pixelImportance(maps.at(method), images.size(2), images.size(3))[0].contiguous();
            WorkbenchMap& map = done.maps[method];
            map.importance = toFloatTensor(importance);
            map.low = importance.min().item<double>();
            map.high = importance.max().item<double>();
            if (request.metrics.empty())
                continue;
            FaithfulnessResult scores;
            try {
                scores = evaluateFaithfulness(
                    engine, x, maps.at(method), target, oneScored, part(stage++, 1, "metrics: " + method));
            } catch (const Cancelled&) {
                scores.cancelled = true;
            }
            FaithfulnessResult& all = scored[method];
            all.pixelsPerStep = result.pixelsPerStep = scores.pixelsPerStep;
            for (const auto& metric : request.metrics) {
                const auto found = scores.metrics.find(metric);
                const bool ran = !scores.cancelled && found != scores.metrics.end();
                const double value = ran ? found->second.perImage.at(0) : std::nan("");
                all.metrics[metric].perImage.push_back(value);
                if (!ran)
                    continue;
                map.metrics[metric] = value;
                if (!found->second.curves.empty()) {
                    all.metrics[metric].curves.push_back(found->second.curves[0]);
                    map.curves[metric] = found->second.curves[0];
                }
            }
            if (scores.cancelled) { // the image keeps its maps; metrics not run are NaN
                result.cancelled = true;
                break;
            }
        }
        // Methods after a cancel in the metrics: NaN for this image, as for the metrics not run.
        for (const auto& method : request.methods)
            for (const auto& metric : request.metrics) {
                auto& values = scored[method].metrics[metric].perImage;
                if (values.size() < done.index + 1)
                    values.push_back(std::nan(""));
            }
        result.images.push_back(done.image);
        for (const auto& [method, map] : done.maps)
            result.maps[method].push_back(map);
        result.measures.images.push_back({done.image.image, done.image.target, done.image.targetDescription});
        if (reports.onImage)
            reports.onImage(done);
    }
    for (const auto& [method, scores] : scored) {
        addFaithfulness(result.measures, method, scores, faithfulness);
        for (const auto& [metric, values] : scores.metrics)
            result.summary[method][metric] = summarise(values);
    }
    if (request.sanityMode.empty() || result.cancelled || result.images.empty())
        return result;

    SanityRequest sanity;
    sanity.attribution = attribution;
    sanity.mode = parseRandomisationMode(request.sanityMode);
    sanity.seed = request.seed;
    sanity.keepMaps = true;
    SanityResult report;
    try {
        report = checkSanity(engine, scratch, images.narrow(0, 0, static_cast<int64_t>(result.images.size())), sanity,
            part(count * perImage, count, "sanity check"));
    } catch (const Cancelled&) {
        result.cancelled = true;
        return result;
    }
    result.cancelled = report.cancelled;
    result.notRandomised = report.skipped;
    result.afterProbe = report.afterProbe;
    addSanity(result.measures, report, request.sanityMode);
    for (const auto& method : report.methods)
        for (const auto& layer : method.layers) {
            WorkbenchSanityLayer entry;
            entry.layer = layer.layer;
            entry.type = layer.type;
            entry.spearmanAbs = summariseFinite(layer.spearmanAbs).mean;
            entry.spearman = summariseFinite(layer.spearman).mean;
            entry.ssim = summariseFinite(layer.ssim).mean;
            entry.firstImage = toFloatTensor(
                pixelImportance(layer.maps.narrow(0, 0, 1), images.size(2), images.size(3))[0].contiguous());
            result.sanity[method.method].push_back(std::move(entry));
        }
    return result;
}

std::vector<std::string> writeAttributionMaps(
    const std::string& path, const AttributionWorkbenchResult& result, const ExportManifest* manifest)
{
    NamedValues values;
    ExportManifest described = manifest ? *manifest : ExportManifest{};
    const auto asTensor = [](const FloatTensor& t) { return toTensor(t); };
    for (const auto& [method, maps] : result.maps) {
        std::vector<at::Tensor> stacked;
        for (const auto& map : maps)
            stacked.push_back(asTensor(map.importance));
        values.emplace_back(method, at::stack(stacked));
        described.keys.push_back({method, "", method + " summed over the input's channels"});
        std::map<std::string, std::vector<double>> metrics;
        for (const auto& map : maps)
            for (const auto& [metric, value] : map.metrics)
                metrics[metric].push_back(value);
        for (const auto& [metric, perImage] : metrics) {
            values.emplace_back(method + ":" + metric, at::tensor(perImage, at::kDouble));
            described.keys.push_back({method + ":" + metric, "", metric + " per image"});
        }
    }
    std::vector<int64_t> targets;
    for (const auto& image : result.images)
        targets.push_back(image.target);
    values.emplace_back("targets", at::tensor(targets, at::kLong));
    described.keys.push_back({"targets", "", "target class"});
    return writeTensors(path, values, &described);
}

AttributionWorkbenchResult AttributionAnalysis::run(AnalysisContext& context, const Request& request)
{
    auto engine = context.models.engine(context.model);
    // The sanity check randomises a copy of its own, never the model the window runs.
    const std::shared_ptr<Model> scratch = request.sanityMode.empty() ? nullptr : context.models.copy(context.model);
    AttributionWorkbenchReports reports;
    reports.progress = context.progress;
    reports.cancelled = context.cancelled;
    reports.onImage = [&context](const WorkbenchImageResult& image) { context.deliver(image); };
    return runAttributionWorkbench(*engine, scratch, request, reports);
}

} // namespace torchscope
