// torchscope-cli dissect / concepts make (concepts_command.cpp defines their options): need images.
#include "cli_manifest.h"
#include "common/error.h"
#include "common/strings.h"
#include "concepts/dissection.h"
#include "concepts/synthetic_concepts.h"
#include "concepts_command.h"
#include "graph/engine.h"
#include "model/model.h"
#include "open_model.h"
#include "problems.h"
#include "stop_requests.h"

#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

namespace torchscope::cli {

namespace {

std::pair<int, int> imageSize(const std::string& text)
{
    const auto parts = split(text, 'x');
    try {
        if (parts.size() == 1)
            return {std::stoi(parts[0]), std::stoi(parts[0])};
        if (parts.size() == 2)
            return {std::stoi(parts[0]), std::stoi(parts[1])};
    } catch (const std::exception&) { }
    throw UsageError("--size '" + text + "': expected S or HxW (224, 160x240)");
}

} // namespace

int runDissect(const CliOptions& options)
{
    const auto model = openModel(options);
    DissectionRequest request;
    request.setup = chooseSetup(*model, options);
    request.layers = options.layers;
    request.concepts = options.concepts;
    request.units = options.units;
    request.method = parseDissectionMethod(options.dissectMethod);
    request.quantile = options.quantile;
    request.iouThreshold = options.iouThreshold;
    request.aucThreshold = options.aucThreshold;
    request.alpha = options.alpha;
    request.pooling = options.dissectPooling;
    request.formulaLength = options.formulaLength;
    request.beam = options.beam;
    request.top = options.dissectTop;
    request.topImages = options.topImages;
    request.maxImages = options.maxImages;
    request.imageBatch = options.batch;
    request.mapSpillBytes = options.spillMb < 0 ? -1 : options.spillMb << 20;
    if (!endsWith(options.out, ".json") && !endsWith(options.out, ".csv"))
        throw UsageError("--out '" + options.out + "': a dissection is written as FILE.json or FILE.csv");
    const std::filesystem::path folder = std::filesystem::absolute(options.out).parent_path();
    if (!std::filesystem::is_directory(folder))
        throw UsageError("--out '" + options.out + "': the folder '" + folder.string() + "' does not exist");
    Engine engine(model);
    DissectionResult result;
    {
        const StopRequests stops(false);
        result = dissect(engine, request, [](const Progress& p) {
            std::cerr << "\r" << p.stage << ": " << p.done << " / " << p.total << "   " << std::flush;
            return !StopRequests::asked();
        });
        std::cerr << '\n';
    }
    printSkipped(result.failures);
    printWarnings(result.warnings);
    for (const auto& layer : result.layers) {
        std::cout << layer.layer << ": " << layer.unitResults.size() << ' ' << layer.units;
        if (result.method != DissectionMethod::Invert)
            std::cout << ", " << layer.interpretableIou << " interpretable by IoU";
        if (result.method != DissectionMethod::Iou)
            std::cout << ", " << layer.interpretableInvert << " by INVERT";
        std::cout << '\n';
        for (const auto& count : layer.categories)
            if (count.iou > 0 || count.invert > 0)
                std::cout << "  " << count.category << ": " << count.iou << " (IoU), " << count.invert << " (INVERT)\n";
    }
    if (result.spilledBytes > 0)
        std::cout << "the second pass read " << (result.spilledBytes + (1 << 20) - 1) / (1 << 20)
                  << " MiB of maps from a temporary file (the model ran once)\n";
    std::ostringstream timing; // its own stream: the precision stays here
    timing << std::fixed << std::setprecision(3) << "dissected " << result.imagesRead << " images in " << result.seconds
           << " s, of which the model's forward passes " << result.modelSeconds << " s\n";
    std::cout << timing.str();
    ExportManifest manifest = cliManifest(options, *model, request.setup, {});
    manifest.settings.emplace_back("units", options.units);
    writeDissection(options.out, result, &manifest);
    std::cout << "wrote " << options.out << '\n';
    return result.cancelled ? 130 : 0;
}

int runConcepts(const CliOptions& options)
{
    SyntheticConceptsRequest request;
    request.out = options.out;
    request.images = options.conceptImages;
    request.seed = static_cast<uint64_t>(options.seed);
    std::tie(request.height, request.width) = imageSize(options.imageSize);
    request.backgrounds = options.backgrounds;
    SyntheticConceptsResult result;
    {
        const StopRequests stops(false);
        result = makeSyntheticConcepts(request, [](const Progress& p) {
            std::cerr << "\r" << p.stage << ": " << p.done << " / " << p.total << "   " << std::flush;
            return !StopRequests::asked();
        });
        std::cerr << '\n';
    }
    std::cout << "wrote " << result.images << " images to " << options.out << '\n';
    for (size_t c = 0; c < result.concepts.size(); ++c)
        std::cout << "  " << std::left << std::setw(9) << result.concepts[c] << std::setw(8) << result.categories[c]
                  << result.imagesWith[c] << " images\n";
    return result.cancelled ? 130 : 0;
}

} // namespace torchscope::cli
