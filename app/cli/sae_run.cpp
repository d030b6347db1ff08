// torchscope-cli sae train / sae evaluate (sae_command.cpp defines their options): needs images.
#include "analysis_commands.h"
#include "attribution_setup.h"
#include "cli_manifest.h"
#include "common/error.h"
#include "common/strings.h"
#include "distributed_run.h"
#include "graph/engine.h"
#include "model/model.h"
#include "open_model.h"
#include "problems.h"
#include "sae/sae_evaluation.h"
#include "sae/sae_latents.h"
#include "sae/sae_training.h"

#include <cmath>
#include <iomanip>
#include <iostream>
#include <sstream>

namespace torchscope::cli {
namespace {

// A comma-separated list of whole numbers (none when empty). Throws UsageError naming the option.
std::vector<int64_t> wholeNumbers(const std::string& list, const char* option, const char* expected)
{
    std::vector<int64_t> numbers;
    for (const auto& text : list.empty() ? std::vector<std::string>{} : split(list, ',')) {
        try {
            size_t used = 0;
            numbers.push_back(std::stoll(text, &used));
            if (used != text.size())
                throw std::invalid_argument(text);
        } catch (const std::exception&) {
            throw UsageError(std::string(option) + " '" + list + "': expected " + expected);
        }
    }
    return numbers;
}

int64_t memoryBytes(const CliOptions& options)
{
    return options.memoryMb > 0 ? options.memoryMb << 20 : 0;
}

int runSaeTrain(const CliOptions& given)
{
    // Under torchrun, each rank trains on its share of the folder, the gradients averaged over c10d.
    const std::unique_ptr<DistributedRun> run = DistributedRun::join(given);
    const CliOptions options = run ? run->rankOptions(given) : given;
    std::shared_ptr<Model> model;
    if (run)
        run->prepareTogether(
            [&] {
                model = openModel(options);
                return int64_t{0};
            },
            "the model");
    else
        model = openModel(options);
    SaeTrainingRequest request;
    request.setup = chooseSetup(*model, options);
    request.layers = options.layers;
    request.images = options.imageFolder;
    const std::vector<int64_t> expansions
        = wholeNumbers(options.expansion, "--expansion", "latents per input dimension such as 16, or 8,16,32");
    const std::vector<int64_t> latents
        = wholeNumbers(options.latents, "--latents", "latent counts such as 4096, or 4096,16384");
    for (const int64_t x : expansions)
        if (x < 1 || x > 1024)
            throw UsageError("--expansion " + std::to_string(x) + ": expected 1 to 1024");
    for (const int64_t n : latents)
        if (n < 1 || n > (int64_t{1} << 24))
            throw UsageError("--latents " + std::to_string(n) + ": expected 1 to 16777216");
    if (expansions.empty() && latents.empty())
        throw UsageError("--expansion: expected latents per input dimension such as 16");
    request.expansions = latents.empty() ? expansions : std::vector<int64_t>{};
    request.latentCounts = latents;
    request.k = options.saeK;
    request.batchTopK = options.architecture == "batchtopk";
    request.matryoshkaWidths = wholeNumbers(options.matryoshka, "--matryoshka", "prefix widths such as 512,2048");
    request.geometricMedianInit = options.decoderBiasInit == "geometric-median";
    request.cache = options.vectorCache;
    request.epochs = options.epochs;
    request.positions = options.positions;
    request.vectors = options.tokens;
    request.batch = options.saeBatch;
    request.learningRate = options.saeLearningRate;
    request.seed = static_cast<uint64_t>(options.seed);
    request.memoryBytes = memoryBytes(options);
    request.imageBatch = options.batch;
    request.out = options.out;
    request.resume = options.resume;
    Engine engine(model);
    const StopRequests stops(run != nullptr);
    const bool speaks = !run || run->root(); // progress and results come from rank 0
    const ProgressCallback progress = [&options, speaks](const Progress& p) {
        if (!speaks)
            return !StopRequests::asked();
        std::cerr << "\r" << p.done << " / " << p.total << " images";
        if (options.epochs > 1)
            std::cerr << " (" << options.epochs << " epochs)";
        if (p.values.size() >= 5)
            std::cerr << std::setprecision(4) << "  vectors " << static_cast<int64_t>(p.values[4]) << "  loss "
                      << p.values[0] << "  FVU " << p.values[1] << "  L0 " << p.values[2] << "  dead "
                      << std::setprecision(3) << 100.0 * p.values[3] << " %   ";
        std::cerr << std::flush;
        return !StopRequests::asked();
    };
    const SaeTrainingResult result
        = trainSparseAutoencoders(engine, request, progress, run ? &run->lockstep() : nullptr);
    if (!speaks)
        return result.cancelled ? 130 : 0;
    std::cerr << '\n';
    if (run)
        std::cout << "trained on " << run->size() << " ranks, " << request.batch / run->size()
                  << " vectors of each step on each\n";
    printSkipped(result.failures);
    printWarnings(result.warnings);
    if (result.imagesBefore > 0)
        std::cout << "resumed after " << result.imagesBefore << " images\n";
    if (result.fromCache)
        std::cout << "read the vectors from the cache " << options.vectorCache << " (no forward pass)\n";
    for (const auto& layer : result.layers) {
        if (layer.folder.empty())
            continue;
        std::cout << layer.layer << ": d_in " << layer.dIn << ", d_sae " << layer.dSae;
        if (!layer.steps.empty()) {
            const SaeStepMetrics& m = layer.steps.back();
            std::cout << ", " << layer.steps.size() << " steps here, " << m.vectors << " vectors in all; last step FVU "
                      << m.fvu << ", L0 " << m.l0 << ", dead " << 100.0 * m.deadFraction << " %";
        }
        std::cout << "\nwrote " << layer.folder << '\n';
    }
    if (result.cancelled) {
        std::cout << "interrupted after " << result.imagesBefore + result.images
                  << " images; saved, go on with --resume\n";
        return 130;
    }
    return 0;
}

int runSaeEvaluate(const CliOptions& options)
{
    const auto model = openModel(options);
    SaeEvaluationRequest request;
    request.setup = chooseSetup(*model, options);
    request.sae = options.sae;
    request.images = options.imageFolder;
    request.layer = options.layers.empty() ? std::string() : options.layers.front();
    request.maxImages = options.maxImages;
    request.imageBatch = options.batch;
    Engine engine(model);
    SaeEvaluationResult result;
    {
        const InterruptibleProgress progress("images");
        result = evaluateSparseAutoencoder(engine, request, progress.callback());
    }
    printSkipped(result.failures);
    printWarnings(result.warnings);
    std::cout << std::setprecision(4) << result.layer << " (" << result.positions << "), " << result.images
              << " images, " << result.vectors << " vectors: FVU " << result.fvu << ", explained variance "
              << result.explainedVariance << ", L0 " << result.l0 << ", dead " << result.deadLatents << " / "
              << result.dSae << ", dense " << result.denseLatents << '\n';
    std::ostringstream recovered;
    recovered << std::setprecision(4) << 100.0 * result.lossRecovered << " %";
    const std::string recoveredText = std::isnan(result.lossRecovered) ? "undefined" : recovered.str();
    if (result.downstream)
        std::cout << "spliced: KL " << result.klSpliced << " nats, top-1 agreement " << 100.0 * result.top1Spliced
                  << " %; zero-ablated: KL " << result.klZero << ", top-1 " << 100.0 * result.top1Zero
                  << " %; loss recovered " << recoveredText << " (cross-entropy against " << result.lossAgainst
                  << ": clean " << result.lossClean << ", spliced " << result.lossSpliced << ", zero-ablated "
                  << result.lossZero << ")\n";
    ExportManifest manifest = cliManifest(options, *model, request.setup, {});
    manifest.settings.emplace_back("images", options.imageFolder);
    writeSaeEvaluation(options.out, result, &manifest);
    std::cout << "wrote " << options.out << '\n';
    return result.cancelled ? 130 : 0;
}

int runSaeLatents(const CliOptions& options)
{
    const auto model = openModel(options);
    SaeLatentsRequest request;
    request.setup = chooseSetup(*model, options);
    request.sae = options.sae;
    request.images = options.imageFolder;
    request.layer = options.layers.empty() ? std::string() : options.layers.front();
    request.top = options.topK;
    request.effects = options.effects;
    request.effectLatents = wholeNumbers(options.latentList, "--latents", "latent indices such as 1,5,9");
    request.maxImages = options.maxImages;
    request.imageBatch = options.batch;
    Engine engine(model);
    SaeLatentsResult result;
    {
        const StopRequests stops(false);
        result = computeSaeLatents(engine, request, [](const Progress& p) {
            std::cerr << "\r" << p.stage << ": " << p.done << " / " << p.total << "   " << std::flush;
            return !StopRequests::asked();
        });
        std::cerr << '\n';
    }
    printSkipped(result.failures);
    printWarnings(result.warnings);
    int64_t alive = 0, measured = 0;
    for (const auto& latent : result.latents) {
        alive += latent.fires > 0 ? 1 : 0;
        measured += latent.hasEffect ? 1 : 0;
    }
    std::cout << result.layer << ": " << result.latents.size() << " latents, " << alive << " fire on "
              << result.images.size() << " images (" << result.vectors << " vectors); effects of " << measured << '\n';
    ExportManifest manifest = cliManifest(options, *model, request.setup, {});
    manifest.settings.emplace_back("images", options.imageFolder);
    writeSaeLatents(options.out, result, &manifest);
    std::cout << "wrote " << options.out << '\n';
    return result.cancelled ? 130 : 0;
}

} // namespace

int runSae(const CliOptions& options)
{
    if (options.subcommand == "train")
        return runSaeTrain(options);
    if (options.subcommand == "latents")
        return runSaeLatents(options);
    return runSaeEvaluate(options);
}

} // namespace torchscope::cli
