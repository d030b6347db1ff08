// The options of the commands whose inputs or outputs are image files (gradcam, patch, visualize),
// defined here, in a file every build compiles: a build without OpenCV still takes and documents
// them, and its runGradCam, runPatch and runVisualize (image_inputs_unavailable.cpp) refuse them
// with the reason. Their runs are analysis_commands.cpp and visualize_command.cpp.
#include "analysis_commands.h"
#include "visualize_command.h"

#include <CLI/CLI.hpp>

namespace torchscope::cli {

// torchscope-cli gradcam (the run: analysis_commands.cpp, refused without OpenCV).
Command gradCamCommand()
{
    return {"gradcam",
        [](CLI::App& app, CliOptions& o) {
            CLI::App* gradcam = app.add_subcommand("gradcam", "Grad-CAM and saliency maps of images at a layer");
            addModelOptions(gradcam, o,
                "Grad-CAM (Selvaraju et al.): the target score's gradient at --layer, averaged over positions, weighs\n"
                "the layer's channels; their weighted sum, ReLU. Saliency: max over input channels of |d score / d "
                "input|.\n"
                "Each image runs on its own and is explained for its own class unless --target names one.\n"
                "Writes FILE.pt/.npz/.safetensors: \"gradcam\" [N, H, W] (the input's size), \"gradcam_layer\"\n"
                "[N, h, w], \"saliency\" [N, H, W], \"target\" [N]; maps of images of different sizes as KEY/i.\n");
            repeatable(gradcam, "--input", o.inputs, "an image or a folder of images (repeatable)")->required();
            gradcam->add_option("--layer", o.layer, "the module whose output Grad-CAM weighs")->required();
            addTarget(gradcam, o);
            gradcam->add_option("--out,-o", o.out, "FILE.pt, FILE.npz or FILE.safetensors")->required();
            return gradcam;
        },
        runGradCam};
}

// torchscope-cli patch (the run: analysis_commands.cpp, refused without OpenCV).
Command patchCommand()
{
    return {"patch",
        [](CLI::App& app, CliOptions& o) {
            CLI::App* patch
                = app.add_subcommand("patch", "activation patching, channel ablation or the difference of two inputs");
            addModelOptions(patch, o,
                "Modes:\n"
                "  patch       run A, B, and A with --layer's output replaced by B's (nethook's edit_output)\n"
                "  ablate      run A, and A with --channels of --layer set to zero\n"
                "  difference  A's and B's output of --layer, A - B, and the channels ranked by mean |A - B|\n"
                "Prints each run's top classes. Writes FILE.pt/.npz/.safetensors: RUN/scores and RUN/COMPARE_LAYER\n"
                "per run (a, b, patched, ablated); difference: \"a\", \"b\", \"difference\", \"ranked_channels\".\n");
            patch->add_option("--mode", o.mode, "patch, ablate or difference")
                ->check(CLI::IsMember({"patch", "ablate", "difference"}))
                ->default_str("patch");
            patch->add_option("--a", o.imageA, "image A")->required();
            patch->add_option("--b", o.imageB, "image B (patch, difference)");
            patch->add_option("--layer", o.layer, "the patched, ablated or compared layer")->required();
            patch->add_option("--channels", o.ablateChannels, "ablate: C1,C2,... of --layer")
                ->delimiter(',')
                ->check(CLI::NonNegativeNumber);
            patch->add_option("--compare", o.compareLayer, "a later layer whose output each run also gives");
            repeatable(
                patch, "--edit", o.edits, "zero or scale channels in every run (PATH:zero:C,.. PATH:scale:C,..:F)");
            patch->add_option("--out,-o", o.out, "FILE.pt, FILE.npz or FILE.safetensors");
            return patch;
        },
        runPatch};
}

// torchscope-cli visualize (the run: visualize_command.cpp, refused without OpenCV).
Command visualizeCommand()
{
    return {"visualize",
        [](CLI::App& app, CliOptions& o) {
            CLI::App* visualize = app.add_subcommand(
                "visualize", "optimise images that excite a layer's channels (feature visualisation)");
            addModelOptions(visualize, o,
                "Activation maximisation (Olah et al., Distill 2017): an image parameterised as a 1/f-scaled\n"
                "spectrum (--param fft) or as pixels, colours decorrelated, jittered, scaled and rotated at random\n"
                "each step, optimised with Adam for --steps. Images get MODEL's input setup (size, values).\n"
                "One image: --out FILE.png (or FILE.pt). Several channels: --out FOLDER with one PNG per image,\n"
                "sheet.png and index.html (contact sheets; with --data, beside each channel's top --top images of\n"
                "that folder) and visualization.json. Deterministic on the CPU for a --seed; several channels\n"
                "are optimised --batch at a time, batch k with seed + k.\n");
            visualize->add_option("--layer", o.layer, "the module path to visualise")->required();
            visualize
                ->add_option("--channels,--channel", o.channels, "C, FIRST-LAST, C1,C2,... or all (probe: its class)")
                ->capture_default_str();
            visualize->add_option("--neuron", o.neuron, "Y,X or centre: one position instead of the channel's mean");
            visualize->add_option(
                "--probe", o.probeFile, "a probe .pt (probe train): maximise its score for --channel's class");
            visualize->add_option("--direction", o.direction, "a .pt tensor [C]: maximise the dot product with it");
            visualize->add_flag("--negative", o.negative, "minimise instead");
            visualize->add_option("--steps", o.steps, "optimisation steps")
                ->check(CLI::Range(1, 100000))
                ->capture_default_str();
            visualize->add_option("--size", o.size, "the image's side; 0: the model's input size")
                ->check(CLI::Range(0, 2048))
                ->capture_default_str();
            visualize->add_option("--param", o.param, "fft or pixel")
                ->check(CLI::IsMember({"fft", "pixel"}))
                ->capture_default_str();
            visualize->add_option("--seed", o.seed, "random seed")->capture_default_str();
            visualize->add_option("--lr", o.learningRate, "Adam's learning rate")
                ->check(CLI::Range(1e-6, 10.0))
                ->capture_default_str();
            visualize->add_option("--images", o.images, "images per objective (with --diversity, different ones)")
                ->check(CLI::Range(1, 64))
                ->capture_default_str();
            visualize->add_option("--diversity", o.diversity, "weight of the diversity term between images")
                ->check(CLI::Range(0.0, 1e6))
                ->capture_default_str();
            visualize->add_flag("--no-transforms", o.noTransforms, "no jitter, scaling or rotation");
            visualize->add_option("--data", o.data, "an image folder: show each channel's top images from it");
            visualize->add_option("--top", o.topK, "top images per channel with --data")
                ->check(CLI::Range(1, 64))
                ->capture_default_str();
            visualize->add_option("--batch", o.batch, "images optimised together")
                ->check(CLI::Range(1, 256))
                ->capture_default_str();
            visualize->add_option("--out,-o", o.out, "FILE.png, FILE.pt or a FOLDER")->required();
            return visualize;
        },
        runVisualize};
}

} // namespace torchscope::cli
