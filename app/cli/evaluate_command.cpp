#include "evaluate_command.h"

#include "attribution/attribution_report.h"
#include "attribution/faithfulness.h"
#include "attribution/input_attributions.h"
#include "attribution_setup.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "common/finite_summary.h"
#include "common/strings.h"
#include "export/read_tensors.h"
#include "graph/engine.h"
#include "model/model.h"

#include <ATen/ATen.h>

#include <iomanip>
#include <iostream>

namespace torchscope::cli {
namespace {

struct MapsToScore {
    std::map<std::string, at::Tensor> maps; // method -> [N, K, h, w]
    std::vector<int64_t> targets;
    std::vector<std::string> descriptions; // what each target is, where known
};

MapsToScore mapsFromFile(const CliOptions& options, const AttributionSetup& job, Engine& engine)
{
    const auto file = readNamedTensors(options.attributions);
    MapsToScore out;
    const int64_t n = job.images.size(0);
    for (const auto& method : job.request.methods) {
        const at::Tensor* found = inputSizedMap(file, method);
        if (!found)
            throw Error(options.attributions + " has no key '" + method + "' (nor '" + method + ":input')");
        if (found->dim() != 4 || found->size(0) != n)
            throw Error(options.attributions + ": '" + method + "' is " + shapeToString(found->sizes().vec()) + "; ["
                + std::to_string(n) + ", channels, height, width] was expected, one map per input");
        out.maps[method] = found->to(at::kFloat);
    }
    if (const auto targets = file.find("targets"); targets != file.end()) {
        const at::Tensor t = targets->second.to(at::kLong).contiguous();
        if (t.numel() != n)
            throw Error(options.attributions + ": 'targets' has " + std::to_string(t.numel()) + " entries for "
                + std::to_string(n) + " inputs");
        out.targets.assign(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + n);
    } else if (options.target) {
        out.targets.assign(static_cast<size_t>(n), *options.target);
    } else {
        const ScoreSource source = scoreSourceOf(job.request);
        const at::Tensor predicted = predictedClasses(engine, job.images, source).contiguous();
        out.targets.assign(predicted.data_ptr<int64_t>(), predicted.data_ptr<int64_t>() + n);
    }
    return out;
}

} // namespace

int runEvaluate(const CliOptions& options)
{
    const bool csv = writesCsv(options, "evaluate");
    AttributionSetup job = prepareAttribution(options);
    Engine engine(job.model);

    MapsToScore scored;
    bool cancelled = false;
    if (!options.attributions.empty()) {
        scored = mapsFromFile(options, job, engine);
    } else {
        const InterruptibleProgress progress("images explained");
        InputAttributionResult made = attributeInputs(engine, job.images, job.request, progress.callback());
        cancelled = made.cancelled;
        for (const auto& method : job.request.methods)
            scored.maps[method] = *inputSizedMap(made.maps, method);
        scored.targets = made.targets;
        scored.descriptions = made.targetDescriptions;
    }
    const auto explained = static_cast<int64_t>(scored.targets.size());

    FaithfulnessRequest request;
    request.metrics = options.metrics;
    request.source = scoreSourceOf(job.request);
    request.pixelsPerStep = options.pixelsPerStep;
    if (!options.fill.empty())
        request.deletionFill = request.insertionStart = parseFill(options.fill);
    request.blurSigma = options.blurSigma;
    request.seed = static_cast<uint64_t>(options.seed);
    request.memoryBytes = job.request.memoryBytes;
    AttributionReport report = explainedImages(options, job, scored.targets, scored.descriptions);
    report.attributions = options.attributions;
    for (const auto& [method, maps] : scored.maps) {
        if (cancelled || InterruptibleProgress::interrupted())
            break;
        std::cerr << method << ":\n";
        const InterruptibleProgress progress("images scored");
        const FaithfulnessResult result = evaluateFaithfulness(engine, job.images.narrow(0, 0, explained),
            maps.narrow(0, 0, explained), scored.targets, request, progress.callback());
        addFaithfulness(report, method, result, request);
        cancelled = result.cancelled;
    }
    if (report.metrics.empty())
        throw Error("interrupted before any map was scored; nothing written");
    writeFileAtomically(options.out, csv ? faithfulnessCsv(report) : attributionReportJson(report));

    std::cout << std::fixed << std::setprecision(4);
    for (const auto& [method, metrics] : report.metrics)
        for (const auto& [metric, values] : metrics) {
            const FiniteSummary s = summariseFinite(values.perImage);
            std::cout << "  " << method << "  " << metric << ": " << s.mean << " ± " << s.sd << " (" << s.count
                      << " images)\n";
        }
    if (cancelled)
        std::cerr << "torchscope-cli: interrupted; the file holds what was scored\n";
    std::cout << "wrote " << options.out << '\n';
    return 0;
}

} // namespace torchscope::cli
