#include "attribution/attribution_workbench.h"

#include "attribution/faithfulness.h"
#include "attribution/input_attributions.h"
#include "attribution/sanity_checks.h"
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

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

namespace torchscope {
namespace {

// A stage's progress as the whole job's: stages of equal weight, one after another.
ProgressCallback stageProgress(const ProgressCallback& progress, int stage, int stages, const std::string& name)
{
    if (!progress)
        return {};
    return [=](const Progress& p) {
        const int64_t total = std::max<int64_t>(1, p.total);
        return progress(Progress{stage * 1000 + 1000 * p.done / total, stages * 1000, name, {}});
    };
}

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
    const AttributionWorkbenchRequest& request, const ProgressCallback& progress)
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
    for (size_t i = 0; i < loaded.paths.size(); ++i) {
        WorkbenchImage image;
        image.image = loaded.paths[i];
        image.picture = std::move(loaded.pictures[i]);
        result.images.push_back(std::move(image));
    }
    result.failures = std::move(loaded.failures);
    const at::Tensor images = loaded.batch;
    const InputAttributionRequest attribution = inputAttributionRequest(request);
    if (attribution.baseline.kind == BaselineKind::Image)
        throw Error("the window's baselines are black, blur and noise; a user's image is the CLI's --baseline FILE");
    const int stages = 1 + static_cast<int>(request.methods.size()) * (request.metrics.empty() ? 0 : 1)
        + (request.sanityMode.empty() ? 0 : 1);

    const InputAttributionResult made
        = attributeInputs(engine, images, attribution, stageProgress(progress, 0, stages, "attributions"));
    const auto explained = static_cast<int64_t>(made.targets.size());
    result.cancelled = made.cancelled;
    result.images.resize(static_cast<size_t>(explained));
    for (int64_t i = 0; i < explained; ++i) {
        result.images[static_cast<size_t>(i)].target = made.targets[static_cast<size_t>(i)];
        result.images[static_cast<size_t>(i)].targetDescription = made.targetDescriptions[static_cast<size_t>(i)];
    }
    if (explained == 0)
        return result;
    const at::Tensor batch = images.narrow(0, 0, explained);
    result.measures.model = engine.model().path();
    result.measures.seed = request.seed;
    for (const auto& image : result.images)
        result.measures.images.push_back({image.image, image.target, image.targetDescription});

    const FaithfulnessRequest faithfulness = faithfulnessRequest(request, attribution);
    int stage = 1;
    for (const auto& method : request.methods) {
        const at::Tensor maps = *inputSizedMap(made.maps, method);
        const at::Tensor importance = pixelImportance(maps, images.size(2), images.size(3));
        auto& perImage = result.maps[method];
        for (int64_t i = 0; i < explained; ++i) {
            WorkbenchMap map;
            map.importance = toFloatTensor(importance[i].contiguous());
            map.low = importance[i].min().item<double>();
            map.high = importance[i].max().item<double>();
            perImage.push_back(std::move(map));
        }
        if (request.metrics.empty() || result.cancelled)
            continue;
        const FaithfulnessResult scores = evaluateFaithfulness(engine, batch, maps, made.targets, faithfulness,
            stageProgress(progress, stage++, stages, "metrics: " + method));
        result.cancelled = scores.cancelled;
        result.pixelsPerStep = scores.pixelsPerStep;
        addFaithfulness(result.measures, method, scores, faithfulness);
        for (const auto& [metric, values] : scores.metrics) {
            result.summary[method][metric] = summarise(values);
            for (size_t i = 0; i < perImage.size() && i < values.perImage.size(); ++i) {
                perImage[i].metrics[metric] = values.perImage[i];
                if (i < values.curves.size())
                    perImage[i].curves[metric] = values.curves[i];
            }
        }
    }
    if (request.sanityMode.empty() || result.cancelled)
        return result;

    SanityRequest sanity;
    sanity.attribution = attribution;
    sanity.mode = parseRandomisationMode(request.sanityMode);
    sanity.seed = request.seed;
    sanity.keepMaps = true;
    const SanityResult report
        = checkSanity(engine, scratch, batch, sanity, stageProgress(progress, stage, stages, "sanity check"));
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
    return runAttributionWorkbench(*engine, scratch, request, context.progress);
}

} // namespace torchscope
