#include "evaluate_command.h"

#include "attribution/attribution_measures.h"
#include "attribution/attribution_names.h"
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
#include <CLI/CLI.hpp>

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
        // Maps of another size would be scored against pixels they do not describe: refused, before anything
        // is written. Faithfulness perturbs the inputs, so every map is the inputs' height and width (a
        // layer method's map as `attribute` upsamples it, its ':input' key).
        const int64_t height = job.images.size(2), width = job.images.size(3), channels = job.images.size(1);
        if (found->size(2) != height || found->size(3) != width || (found->size(1) != 1 && found->size(1) != channels))
            throw Error(options.attributions + ": '" + method + "' is " + shapeToString(found->sizes().vec())
                + " but the inputs are " + shapeToString(job.images.sizes().vec()) + "; the maps must be ["
                + std::to_string(n) + ", 1 or " + std::to_string(channels) + ", " + std::to_string(height) + ", "
                + std::to_string(width) + "] (the inputs' height and width), as attribute writes them");
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

static int runEvaluate(const CliOptions& options)
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

    const FaithfulnessRequest request = faithfulnessRequest(job.settings, job.request); // the window's builder
    AttributionMeasures measures = explainedImages(options, job, scored.targets, scored.descriptions);
    measures.attributions = options.attributions;
    for (const auto& [method, maps] : scored.maps) {
        if (cancelled || InterruptibleProgress::interrupted())
            break;
        std::cerr << method << ":\n";
        const InterruptibleProgress progress("images scored");
        const FaithfulnessResult result = evaluateFaithfulness(engine, job.images.narrow(0, 0, explained),
            maps.narrow(0, 0, explained), scored.targets, request, progress.callback());
        addFaithfulness(measures, method, result, request);
        cancelled = result.cancelled;
    }
    if (measures.metrics.empty())
        throw Error("interrupted before any map was scored; nothing written");
    writeFileAtomically(options.out, csv ? faithfulnessCsv(measures) : attributionMeasuresJson(measures));

    std::cout << std::fixed << std::setprecision(4);
    for (const auto& [method, metrics] : measures.metrics)
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

// torchscope-cli evaluate.
Command evaluateCommand()
{
    return {"evaluate",
        [](CLI::App& app, CliOptions& o) {
            CLI::App* evaluate
                = app.add_subcommand("evaluate", "faithfulness metrics: does each map point at what the model uses?");
            addModelOptions(evaluate, o,
                "Metrics: deletion and insertion (Petsiuk et al. 2018, RISE: the pixels, most important first by the "
                "map\n"
                "summed over its channels, are removed from the image (--fill, default zero) or put back into it\n"
                "(starting from --fill, default blur), --pixels-per-step at a time; the area under the target's\n"
                "softmax probability curve), road_morf and road_lerf (Rong et al. 2022: the most / least relevant "
                "pixels\n"
                "above each percentile 10 ... 90 imputed from their neighbours with N(0, 0.01²) noise, image i seeded\n"
                "--seed + i; the mean change of the probability, as pytorch-grad-cam's ROAD...Average), average_drop "
                "and\n"
                "increase_confidence (Chattopadhay et al. 2018: the image\n"
                "times the map scaled to [0, 1]; drop max(0, p - p') / p in percent, increase 100 when p' > p). The\n"
                "maps are made as `attribute` makes them, or read from --attributions (keys as attribute writes them;\n"
                "a layer method's \"M:input\" first). Writes FILE.json (the window's format: each image with its\n"
                "class, per image, mean and sd per method and metric, the deletion / insertion curves) or FILE.csv\n"
                "(method, metric, image, value; mean and sd rows).\n");
            addAttributionOptions(evaluate, o);
            repeatable(
                evaluate, "--metric", o.metrics, join(namesOf(faithfulnessMetricChoices()), ", ") + " (repeatable)")
                ->required()
                ->check(CLI::IsMember(namesOf(faithfulnessMetricChoices())));
            evaluate->add_option("--attributions", o.attributions,
                "score the maps in FILE.npz, FILE.safetensors or FILE.pt instead of making them");
            evaluate
                ->add_option("--pixels-per-step", o.pixelsPerStep,
                    "deletion, insertion: pixels changed per step (default: a hundredth of the image)")
                ->check(CLI::PositiveNumber);
            evaluate
                ->add_option(
                    "--fill", o.fill, "what deleted pixels become and insertion starts from: zero, blur or mean")
                ->check(CLI::IsMember({"zero", "blur", "mean"}));
            evaluate->add_option("--out,-o", o.out, "FILE.json or FILE.csv")->required();
            return evaluate;
        },
        runEvaluate};
}

} // namespace torchscope::cli
