#include "concepts_command.h"

#include <CLI/CLI.hpp>

namespace torchscope::cli {

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
