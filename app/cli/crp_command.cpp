#include "crp_command.h"

#include "analysis_command.h"
#include "problems.h"
#include "relevance/concept_relevance.h"

#include <iomanip>
#include <iostream>

namespace torchscope::cli {
namespace {

void printSummary(const ConceptRelevanceResult& result)
{
    std::cout << "CRP at " << result.layer << " (" << result.channelCount << " channels"
              << (result.tokens ? ", the last dim of its tokens" : "") << "):\n";
    for (const auto& image : result.images) {
        std::cout << "  " << image.image << ": " << image.targetDescription << ", logit " << image.score
                  << "; relevance at the layer " << image.layerSum << ", at the input " << image.inputSum << '\n';
        for (const auto& c : image.channels)
            std::cout << "    channel " << std::setw(4) << c.channel << "  share " << std::showpos << std::fixed
                      << std::setprecision(4) << c.share << "  relevance " << std::defaultfloat << c.relevance
                      << "  reaches the input " << c.mapSum << std::noshowpos << '\n';
    }
    if (!result.referenceFolder.empty()) {
        std::cout << "references by " << result.referenceBy << " over " << result.referenceImages << " image(s) of "
                  << result.referenceFolder << ":\n";
        for (const auto& entry : result.references) {
            std::cout << "  channel " << entry.channel << ":";
            for (const auto& r : entry.references)
                std::cout << ' ' << r.image << " (" << r.value << ')';
            std::cout << '\n';
        }
    }
    for (const auto& line : result.coverage.uncovered)
        std::cout << "not covered by the rules: " << line << '\n';
    printWarnings(result.warnings);
    printSkipped(result.failures);
}

} // namespace

Command crpCommand()
{
    AnalysisCommand<ConceptRelevanceAnalysis> row;
    row.name = "crp";
    row.description = "which channels of a layer carry a prediction, and what they see";
    row.about = "Concept Relevance Propagation (Achtibat et al. 2023, as zennit-crp defines it) on LRP's rules\n"
                "(--composite, --rule, --attention-rule as attribute's lrp): each channel's relevance at --layer\n"
                "summed over its positions and its share (divided by the channels' summed magnitudes), the chosen\n"
                "channels' conditional maps (the relevance masked to the channel at the layer, propagated to the\n"
                "input), and with --references FOLDER each channel's --top images of the folder by its share of\n"
                "their relevance (RelMax; their class: --target, else the class folder's, else the prediction) or\n"
                "of their activation (--reference-by activation: ActMax), with the position where it peaks.\n"
                "Channels are dim 1; a vision transformer's tokens [N, T, D] have theirs last.\n"
                "FILE.json holds every figure and map; FILE.pt / .npz / .safetensors: \"relevance\", \"shares\"\n"
                "[N, C], \"channels\" [N, K], \"maps\" [N, K, H, W], \"lrp\" [N, H, W], \"targets\", \"scores\",\n"
                "\"layer_sums\", \"input_sums\", and per referenced channel C \"references:C\" (positions in the\n"
                "folder, named in the manifest), \"reference_values:C\", \"reference_positions:C\", "
                "\"reference_boxes:C\".\n";
    row.inputHelp = "images or folders of images (of one size as preprocessed)";
    row.outHelp = "FILE.json, FILE.pt, FILE.npz or FILE.safetensors";
    row.explained = [](const ConceptRelevanceResult& result) {
        std::vector<std::string> images;
        for (const auto& image : result.images)
            images.push_back(image.image);
        return images;
    };
    row.targets = [](const ConceptRelevanceResult& result) {
        std::vector<std::string> targets;
        for (const auto& image : result.images)
            targets.push_back(image.targetDescription);
        return targets;
    };
    row.cancelled = [](const ConceptRelevanceResult& result) { return result.cancelled; };
    row.nothingDone = [](const ConceptRelevanceResult& result) { return result.images.empty(); };
    row.printSummary = printSummary;
    row.write = writeConceptRelevance;
    return analysisCommand(std::move(row));
}

} // namespace torchscope::cli
