#include "crp_command.h"

#include "analysis_commands.h"
#include "relevance/concept_relevance.h"

#include <CLI/CLI.hpp>

namespace torchscope::cli {

Command crpCommand()
{
    return {"crp",
        [](CLI::App& app, CliOptions& o) {
            CLI::App* crp
                = app.add_subcommand("crp", "which channels of a layer carry a prediction, and what they see");
            addModelOptions(crp, o,
                "Concept Relevance Propagation (Achtibat et al. 2023, as zennit-crp defines it) on LRP's rules\n"
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
                "\"reference_boxes:C\".\n");
            repeatable(crp, "--input", o.inputs, "images or folders of images (of one size as preprocessed)")
                ->required();
            crp->add_option("--layer", o.layer, "the module whose channels are measured")->required();
            crp->add_option("--target", o.target, "the class explained; default: each image's predicted class")
                ->check(CLI::NonNegativeNumber);
            crp->add_option("--channels", o.crpChannels,
                   "top:K (each image's K most relevant channels) or channel indices (1,5,9)")
                ->check(CLI::Validator(
                    [](std::string& value) -> std::string {
                        try {
                            ChannelChoice::parse(value);
                        } catch (const std::exception& e) {
                            return e.what();
                        }
                        return {};
                    },
                    "top:K|C,C,..."))
                ->capture_default_str();
            addLrpOptions(crp, o);
            repeatable(crp, "--rule", o.rules,
                "PATH=RULE (repeatable): the layers PATH names take RULE instead of the composite's")
                ->check(CLI::Validator(
                    [](std::string& value) -> std::string {
                        try {
                            RuleOverride::parse(value);
                        } catch (const std::exception& e) {
                            return e.what();
                        }
                        return {};
                    },
                    "PATH=RULE"));
            crp->add_option("--references", o.references, "a folder of images: each chosen channel's top images")
                ->check(CLI::ExistingDirectory);
            crp->add_option("--top", o.topK, "references per channel")
                ->check(CLI::Range(1, 10000))
                ->capture_default_str();
            crp->add_option("--reference-by", o.referenceBy, "relevance (RelMax) or activation (ActMax)")
                ->check(CLI::IsMember(referenceModes()))
                ->capture_default_str();
            crp->add_option("--memory-mb", o.memoryMb,
                   "the memory one batch of images may take (default: a quarter of the memory available)")
                ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
            crp->add_option("--out,-o", o.out, "FILE.json, FILE.pt, FILE.npz or FILE.safetensors")->required();
            return crp;
        },
        runCrp};
}

} // namespace torchscope::cli
