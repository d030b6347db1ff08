#include "compare_command.h"

#include "analysis_commands.h"
#include "common/error.h"
#include "common/strings.h"
#include "compare/compare_files.h"
#include "compare/compare_run.h"
#include "export/manifest.h"
#include "image_inputs.h"
#include "inputs.h"
#include "model/model.h"
#include "model/model_setup.h"
#include "open_model.h"
#include "prediction_text.h"
#include "problems.h"
#include "record/labelled_samples.h"
#include "stop_requests.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <thread>

namespace torchscope::cli {
namespace {

std::string scientific(double value)
{
    if (std::isnan(value))
        return "n/a";
    char text[32];
    std::snprintf(text, sizeof text, "%.2e", value);
    return text;
}

std::string padded(const std::string& text, size_t width)
{
    return text.size() >= width ? text : text + std::string(width - text.size(), ' ');
}

size_t widest(const std::vector<std::string>& names, size_t least)
{
    size_t width = least;
    for (const auto& name : names)
        width = std::max(width, name.size());
    return width + 2;
}

// The matrix with B's layers as numbered columns, named under it.
void printMatrix(const CompareResult& result)
{
    const size_t width = widest(result.layersA, 7);
    std::cout << padded("A \\ B", width);
    for (size_t j = 0; j < result.layersB.size(); ++j)
        std::cout << padded("[" + std::to_string(j) + "]", 7);
    std::cout << '\n';
    for (size_t i = 0; i < result.layersA.size(); ++i) {
        std::cout << padded(result.layersA[i], width);
        for (size_t j = 0; j < result.layersB.size(); ++j)
            std::cout << padded(fixed(result.ckaAt(i, j), 3), 7);
        std::cout << '\n';
    }
    std::cout << "B:";
    for (size_t j = 0; j < result.layersB.size(); ++j)
        std::cout << " [" << j << "] " << result.layersB[j];
    std::cout << '\n';
}

void printComparison(const CompareResult& result, const Comparison& comparison)
{
    const bool checkpoints = result.mode == CompareMode::Checkpoints;
    std::cout << '\n' << (checkpoints ? "B against A" : comparison.name + " against cpu float64") << ":\n";
    if (!comparison.unavailable.empty()) {
        std::cout << "  not run: " << comparison.unavailable << '\n';
        return;
    }
    std::vector<std::string> names;
    for (const auto& layer : comparison.layers)
        names.push_back(layer.layer);
    const size_t width = widest(names, 5);
    std::cout << "  " << padded("layer", width) << (checkpoints ? padded("CKA", 8) + padded("cosine", 10) : "")
              << padded("rel. L2", 11) << padded("max abs", 11) << padded("max rel.", 11) << '\n';
    for (size_t i = 0; i < comparison.layers.size(); ++i) {
        const LayerDifference& d = comparison.layers[i];
        std::cout << "  " << padded(d.layer, width)
                  << (checkpoints ? padded(fixed(d.cka, 4), 8) + padded(fixed(d.cosine, 6), 10) : "")
                  << padded(scientific(d.relativeL2), 11) << padded(scientific(d.maxAbsError), 11)
                  << padded(scientific(d.maxRelativeError), 11)
                  << (comparison.firstOver == i ? (checkpoints ? "<- first below " : "<- first over ") : "")
                  << (comparison.firstOver == i
                             ? (checkpoints ? fixed(result.threshold, 3) : scientific(result.threshold))
                             : "")
                  << '\n';
    }
    if (!comparison.firstOver)
        std::cout << "  no layer " << (checkpoints ? "below CKA " : "over relative L2 ")
                  << (checkpoints ? fixed(result.threshold, 3) : scientific(result.threshold)) << '\n';
}

void printResult(const CompareResult& result)
{
    const std::string features = result.features == CkaFeatures::Pooled ? "channel means" : "flattened activations";
    if (result.mode != CompareMode::Precision) {
        std::cout << "Linear CKA (" << features << "), minibatch estimate over " << result.ckaSamples << " samples in "
                  << result.ckaBatches << " batches\n";
        printMatrix(result);
    } else {
        std::cout << result.samples << " samples; every precision against the model in float64 on the CPU\n";
    }
    for (const auto& comparison : result.comparisons)
        printComparison(result, comparison);
}

// The images compared on, in the order they ran (none for a tensor file).
std::vector<ManifestImage> imagesOf(const std::vector<std::string>& inputs, bool tensorInput)
{
    std::vector<ManifestImage> images;
    if (!tensorInput)
        for (const auto& file : listImageInputs(inputs))
            images.push_back({file});
    return images;
}

CompareMode modeOf(const CliOptions& options)
{
    if (!options.mode.empty())
        return parseCompareMode(options.mode);
    return options.modelB.empty() ? CompareMode::Precision : CompareMode::Cka;
}

} // namespace

static int runCompare(const CliOptions& options)
{
    CompareConfig config;
    config.mode = modeOf(options);
    config.layers = options.layers;
    config.layersB = options.layersB;
    config.threshold = options.threshold;
    config.features = options.pooled ? CkaFeatures::Pooled : CkaFeatures::Flattened;
    for (const auto& p : options.precisions)
        config.precisions.push_back(Precision::parse(p));
    if (config.mode == CompareMode::Checkpoints && options.modelB.empty())
        throw UsageError("compare: --mode checkpoints needs MODEL_B, the second checkpoint");
    if (config.mode == CompareMode::Precision && !options.modelB.empty())
        throw UsageError("compare: --mode precision runs one model; leave out MODEL_B '" + options.modelB + "'");
    if (config.mode != CompareMode::Precision && !options.precisions.empty())
        throw UsageError("compare: --precision belongs to --mode precision");
    if (config.mode != CompareMode::Cka && !options.layersB.empty())
        throw UsageError("compare: --layer-b belongs to --mode cka (checkpoints compare the same layers)");
    if (options.maps) // an image's maps: its own --out formats
        return runCompareMaps(options, config);
    if (!options.out.empty()
        && !(endsWith(options.out, ".pt") || endsWith(options.out, ".json") || endsWith(options.out, ".csv")))
        throw UsageError("compare: --out must be FILE.pt, FILE.json or FILE.csv, got '" + options.out + "'");

    const bool tensorInput = options.inputs.size() == 1 && isTensorFile(options.inputs[0]);
    for (const auto& input : options.inputs)
        if (isTensorFile(input) && !tensorInput)
            throw Error("compare takes one tensor file on its own, or image folders and images: '" + input
                + "' is a tensor file among other inputs");

    auto modelA = openModel(options);
    const ModelSetup setup = chooseSetup(*modelA, options);
    BatchStream stream;
    if (tensorInput) {
        stream = tensorBatches(readLabelledSamples(options.inputs[0]).samples, {}, options.batch);
    } else {
        const int threads = options.decodeThreads > 0
            ? options.decodeThreads
            : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
        stream = imageInputBatches(options.inputs, setup, options.batch, threads);
    }

    const StopRequests stops(false); // Ctrl+C stops after the current batch, keeping what is done
    const auto progress = [](const Progress& p) {
        std::cerr << "\r" << p.done << " / " << p.total << " samples" << std::flush;
        return !StopRequests::asked();
    };
    CompareResult result;
    if (config.mode == CompareMode::Precision) {
        LoadOptions load;
        load.operatorLibraries = options.operatorLibraries;
        modelA.reset(); // loaded again in each precision
        result = comparePrecisions(options.model, load, config, stream, progress);
    } else {
        std::shared_ptr<Model> modelB = modelA;
        if (!options.modelB.empty()) {
            CliOptions second = options;
            second.model = options.modelB;
            modelB = openModel(second);
        }
        result = compareModels(modelA, modelB, config, stream, progress);
    }
    std::cerr << '\n';

    printResult(result);
    if (result.cancelled)
        std::cerr << "torchscope-cli: interrupted after " << result.samples << " samples; the results are theirs\n";
    printWarnings(result.warnings);
    printSkipped(result.failures);
    if (!options.out.empty()) {
        // Model A as loaded for the setup (precision mode let go of it: its path and setup stay).
        ExportManifest manifest;
        manifest.command = "torchscope-cli compare";
        manifest.model = options.model;
        manifest.modelB = options.modelB;
        manifest.device = modelA ? modelA->device() : options.device;
        manifest.preprocessing = setup.preprocessing;
        manifest.labels = setup.labels;
        manifest.images = imagesOf(options.inputs, tensorInput);
        manifest.settings = {{"mode", modeName(result.mode)}, {"inputs", join(options.inputs, " ")}};
        writeComparison(options.out, result, &manifest);
    }
    return 0;
}

// torchscope-cli compare.
Command compareCommand()
{
    return {"compare",
        [](CLI::App& app, CliOptions& o) {
            CLI::App* compare
                = app.add_subcommand("compare", "compare two models, two checkpoints or two precisions layer by layer");
            addModelOptions(compare, o,
                "Modes:\n"
                "  cka          linear CKA for every pair of A's and B's layers (any architectures; without MODEL_B, "
                "A\n"
                "               against itself), streamed batch by batch with the unbiased HSIC (Nguyen et al. 2021)\n"
                "  checkpoints  two checkpoints of one architecture on the same inputs: per layer CKA, cosine,\n"
                "               relative L2 and the first layer whose CKA falls below --threshold (default 0.99)\n"
                "  precision    MODEL in float64 on the CPU against --precision (default: float32, bfloat16 and,\n"
                "               with a GPU, cuda float32/float16/bfloat16): per layer max absolute and relative\n"
                "               error, and the first layer whose relative L2 error exceeds --threshold (default 1e-3)\n"
                "Both models get MODEL's input setup. Writes FILE.pt (torch.load), FILE.json or FILE.csv.\n");
            compare->add_option("model_b", o.modelB, "the second model file, .pt or .pt2 (cka, checkpoints)");
            compare
                ->add_option(
                    "--mode", o.mode, "cka, checkpoints or precision (default: cka with MODEL_B, else precision)")
                ->check(CLI::IsMember({"cka", "checkpoints", "precision"}));
            repeatable(compare, "--input", o.inputs, "image folders and images, or one tensor .pt ([N, ...])")
                ->required();
            repeatable(compare, "--layer", o.layers, "layers of MODEL to compare (paths, globs, type:X; repeatable)")
                ->required();
            repeatable(compare, "--layer-b", o.layersB, "cka: layers of MODEL_B (default: the --layer specs)");
            repeatable(
                compare, "--precision", o.precisions, "precision: [DEVICE:]DTYPE to compare with float64 (repeatable)");
            compare->add_option("--threshold", o.threshold, "where two runs part (see the modes)");
            compare->add_flag("--pooled", o.pooled, "CKA on each channel's spatial mean instead of every value");
            compare->add_flag("--maps", o.maps,
                "instead of comparing: the one image of --input through --layer of A and --layer-b of B (precision: "
                "float64 against the first --precision), written as keys a and b to --out (FILE.pt, .npz, "
                ".safetensors)");
            compare->add_option("--out,-o", o.out, "FILE.pt, FILE.json or FILE.csv");
            compare->add_option("--batch", o.batch, "samples per forward pass (CKA needs 4 or more)")
                ->check(CLI::Range(1, 4096)) // a float64 Gram matrix per layer is batch²
                ->capture_default_str();
            compare->add_option("--decode-threads", o.decodeThreads, "image decoding threads; 0: automatic")
                ->check(CLI::Range(0, 1024))
                ->capture_default_str();
            return compare;
        },
        runCompare};
}

} // namespace torchscope::cli
