// torchscope-cli dissect / concepts make (concepts_command.cpp defines their options): need images.
#include "analysis_command.h"
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

namespace {

void printDissection(const DissectionResult& result)
{
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
}

} // namespace

Command dissectCommand()
{
    AnalysisCommand<DissectionAnalysis> row;
    row.name = "dissect";
    row.description = "which units of a layer detect which concepts of a concept set (IoU, INVERT, formulas)";
    row.about
        = "Units: --layer's channels (a ViT's tokens over its patch grid), an SAE's latents (--units sae:FOLDER)\n"
          "or a linear probe's directions (--units probe:FILE), each a map over the layer's positions.\n"
          "iou (Bau et al. 2017, as NetDissect-Lite): each unit's threshold is the top --quantile of its values "
          "over\n"
          "the set; its maps upsampled bilinearly to the masks and thresholded; IoU with each concept's masks "
          "summed\n"
          "over the set; interpretable above --iou-threshold. --formula-length 2 or 3: the best formula of "
          "concepts\n"
          "joined by AND, OR, AND NOT (Mu & Andreas 2020; beam search of width --beam).\n"
          "invert (Bykov et al. 2023): the AUC with which the unit's pooled value separates a concept's images "
          "from\n"
          "the rest, its one-sided Mann-Whitney p Bonferroni-corrected over units x concepts; interpretable with "
          "AUC\n"
          "at least --auc-threshold and p below --alpha.\n"
          "A concept set: images/ and masks/CONCEPT/ (torchscope-cli concepts make writes one), a folder per\n"
          "concept (image-level: invert only) or Broden's index.csv (docs/concepts.md).\n"
          "Progress: images of the first pass (ranking), then of the second (counting), over both. Ctrl+C "
          "writes\n"
          "what is complete.\n";
    row.outHelp = "FILE.json or FILE.csv";
    row.outFormats = {".json", ".csv"};
    row.progressUnit = ""; // ranking, then counting
    row.cancelledExit = 130;
    row.cancelled = [](const DissectionResult& result) { return result.cancelled; };
    row.printSummary = printDissection;
    row.write = [](const std::string& path, const DissectionResult& result, const ExportManifest* manifest) {
        writeDissection(path, result, manifest);
        return std::vector<std::string>{};
    };
    return analysisCommand(std::move(row));
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
