#include "concepts_command.h"

#include <CLI/CLI.hpp>

namespace torchscope::cli {

Command dissectCommand()
{
    return {"dissect",
        [](CLI::App& app, CliOptions& o) {
            CLI::App* dissect = app.add_subcommand(
                "dissect", "which units of a layer detect which concepts of a concept set (IoU, INVERT, formulas)");
            addModelOptions(dissect, o,
                "Units: --layer's channels (a ViT's tokens over its patch grid), an SAE's latents (--units "
                "sae:FOLDER)\n"
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
                "what is complete.\n");
            repeatable(dissect, "--layer", o.layers, "a module to dissect (repeat for several, from one pass)");
            dissect->add_option("--concepts", o.concepts, "a concept set's folder")
                ->required()
                ->check(CLI::ExistingDirectory);
            dissect->add_option("--units", o.units, "channels, sae:FOLDER (a saved SAE) or probe:FILE (a linear probe)")
                ->capture_default_str();
            dissect->add_option("--method", o.dissectMethod, "iou, invert or both")
                ->check(CLI::IsMember({"iou", "invert", "both"}))
                ->capture_default_str();
            dissect->add_option("--quantile", o.quantile, "iou: the top share of a unit's values that is its region")
                ->check(OpenFraction)
                ->capture_default_str();
            dissect->add_option("--iou-threshold", o.iouThreshold, "iou: interpretable above this IoU")
                ->check(CLI::Range(0.0, 1.0))
                ->capture_default_str();
            dissect->add_option("--auc-threshold", o.aucThreshold, "invert: interpretable from this AUC")
                ->check(CLI::Range(0.0, 1.0))
                ->capture_default_str();
            dissect->add_option("--alpha", o.alpha, "invert: interpretable below this corrected p")
                ->check(OpenFraction)
                ->capture_default_str();
            dissect
                ->add_option("--pooling", o.dissectPooling, "invert: a unit's value per image, mean or max of its map")
                ->check(CLI::IsMember({"mean", "max"}))
                ->capture_default_str();
            dissect
                ->add_option("--formula-length", o.formulaLength, "iou: formulas of up to this many concepts (1: none)")
                ->check(CLI::Range(1, 3))
                ->capture_default_str();
            dissect->add_option("--beam", o.beam, "formulas: the beam search's width")
                ->check(CLI::Range(1, 100))
                ->capture_default_str();
            dissect->add_option("--top", o.dissectTop, "concepts kept per unit and method")
                ->check(CLI::Range(1, 1000))
                ->capture_default_str();
            dissect->add_option("--top-images", o.topImages, "images kept per unit (largest value), with maps")
                ->check(CLI::Range(1, 1000))
                ->capture_default_str();
            dissect->add_option("--max-images", o.maxImages, "at most this many of the set's images")
                ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
            dissect->add_option("--batch-images", o.batch, "images per forward pass")
                ->check(CLI::Range(1, 4096))
                ->capture_default_str();
            dissect
                ->add_option("--spill-mb", o.spillMb,
                    "iou: the most MiB of maps kept on disk for the second pass, which otherwise runs the model "
                    "again (default: half the temporary folder's free space; 0: never)")
                ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
            dissect->add_option("--out,-o", o.out, "FILE.json or FILE.csv")->required();
            return dissect;
        },
        runDissect};
}

Command conceptsCommand()
{
    return {"concepts",
        [](CLI::App& app, CliOptions& o) {
            CLI::App* concepts = app.add_subcommand("concepts", "concept sets for dissect (concepts make)");
            concepts->require_subcommand(1);
            CLI::App* make = concepts->add_subcommand(
                "make", "draw a concept set: coloured shapes and textures over noise or photos, with exact masks");
            make->footer("Colours (red, green, blue, yellow, purple), shapes (circle, square, triangle, star) and\n"
                         "textures (stripes, checker, dots): 1 to 3 objects per image, written as images/NNNNN.png,\n"
                         "masks/CONCEPT/NNNNN.png and concepts.csv (docs/concepts.md).");
            make->add_option("--out,-o", o.out, "a new folder")->required();
            make->add_option("--images", o.conceptImages, "how many images")
                ->check(CLI::Range(int64_t{1}, int64_t{10'000'000}))
                ->capture_default_str();
            make->add_option("--seed", o.seed, "the drawing's random seed")->capture_default_str();
            make->add_option("--size", o.imageSize, "S (square) or HxW, 32 to 4096")->capture_default_str();
            make->add_option("--backgrounds", o.backgrounds, "a folder of photos to draw over (default: grey noise)")
                ->check(CLI::ExistingDirectory);
            return concepts;
        },
        runConcepts};
}

} // namespace torchscope::cli
