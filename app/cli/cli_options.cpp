#include "cli_options.h"

#include "attribution/attribution_names.h"
#include "common/strings.h"

#include <CLI/CLI.hpp>
#include <torch/version.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <regex>

namespace torchscope::cli {
namespace {

constexpr const char* Overview
    = R"(TorchScope's command line: look inside a TorchScript model (.pt from torch.jit.script or
torch.jit.trace) without Python hooks. Without MODEL, the bundled demo model (face-api.js's
face-expression network) is used. Run 'torchscope-cli COMMAND --help' for a command's options.
)";

constexpr const char* SpecHelp = R"(
Grab specs: PATH (every call's output: PATH, PATH#1, ...), PATH:in0, PATH:in1 (inputs), PATH:grad
(gradient of the --target score), PATH:attention (the attention probabilities [N, heads, queries,
keys] the module computes, even fused); PATH may be a glob ("layer3.*") or "type:Conv2d".
Edit specs: PATH:zero:C1,C2  PATH:scale:C1,C2:FACTOR  PATH:add:FILE.pt  PATH:replace:FILE.pt
The input setup (--preprocess): none, imagenet, or a JSON file {"preprocess": {"resize": 256,
"crop": 224, "grayscale": false, "scale": 1, "channel_order": "RGB", "mean": [...], "std":
[...]}, "labels": [...], "scores": "logits"} (or only the preprocess object); default: the model's
torchscope.json, else imagenet.
)";

// "auto", "cpu", "cuda" or "cuda:N".
const CLI::Validator DeviceName(
    [](std::string& value) -> std::string {
        static const std::regex valid("auto|cpu|cuda|cuda:[0-9]+");
        return std::regex_match(value, valid) ? "" : "expected auto, cpu, cuda or cuda:N, got '" + value + "'";
    },
    "auto|cpu|cuda|cuda:N");

// A fraction strictly between 0 and 1.
const CLI::Validator OpenFraction(
    [](std::string& value) -> std::string {
        try {
            size_t used = 0;
            const double x = std::stod(value, &used);
            if (used == value.size() && x > 0.0 && x < 1.0)
                return "";
        } catch (const std::exception&) { }
        return "expected a fraction between 0 and 1 (exclusive), got '" + value + "'";
    },
    "(0 - 1)");

double finiteNumber(const std::string& flag, const std::string& text)
{
    try {
        size_t used = 0;
        const double x = std::stod(text, &used);
        if (used == text.size() && std::isfinite(x))
            return x;
    } catch (const std::exception&) { }
    throw UsageError(flag + ": expected a finite number, got '" + text + "'");
}

int64_t integer(const std::string& flag, const std::string& text)
{
    try {
        size_t used = 0;
        const long long n = std::stoll(text, &used);
        if (used == text.size())
            return n;
    } catch (const std::exception&) { }
    throw UsageError(flag + ": expected an integer, got '" + text + "'");
}

std::vector<std::string> splitAt(const std::string& text, char separator)
{
    std::vector<std::string> parts(1);
    for (const char c : text)
        if (c == separator)
            parts.emplace_back();
        else
            parts.back().push_back(c);
    return parts;
}

// "LO:HI" with LO < HI, both finite.
std::pair<double, double> toRange(const std::string& flag, const std::string& text)
{
    const auto parts = splitAt(text, ':');
    if (parts.size() != 2)
        throw UsageError(flag + ": expected LO:HI (two numbers), got '" + text + "'");
    const double lo = finiteNumber(flag, parts[0]);
    const double hi = finiteNumber(flag, parts[1]);
    if (!(lo < hi))
        throw UsageError(flag + ": LO must be below HI, got '" + text + "'");
    return {lo, hi};
}

// "X0,Y0,X1,Y1": a box of at least one pixel, corners not negative.
std::array<int64_t, 4> toBox(const std::string& flag, const std::string& text)
{
    const auto parts = splitAt(text, ',');
    if (parts.size() != 4)
        throw UsageError(flag + ": expected X0,Y0,X1,Y1 (four integers), got '" + text + "'");
    std::array<int64_t, 4> box{};
    for (size_t i = 0; i < 4; ++i)
        box[i] = integer(flag, parts[i]);
    if (box[0] < 0 || box[1] < 0 || box[2] <= box[0] || box[3] <= box[1])
        throw UsageError(flag + ": expected 0 <= X0 < X1 and 0 <= Y0 < Y1, got '" + text + "'");
    return box;
}

// One value per occurrence: "--input a --input b", never "--input a b" (which would swallow MODEL).
CLI::Option* repeatable(
    CLI::App* command, const std::string& name, std::vector<std::string>& values, const std::string& description)
{
    return command->add_option(name, values, description)->allow_extra_args(false);
}

// What every command that opens a model takes.
void addModelOptions(CLI::App* command, CliOptions& o, const std::string& about = "")
{
    command->add_option("model", o.model, "TorchScript file (default: the bundled demo)");
    command->add_option("--device", o.device, "auto (CUDA when available), cpu, cuda, cuda:N")
        ->check(DeviceName)
        ->capture_default_str();
    command->add_option("--preprocess", o.preprocess, "input setup: none, imagenet or FILE.json (see below)");
    command->add_option("--labels", o.labels, "class names: one per line, or a JSON list");
    command->add_option("--scores", o.scores,
        "the output element (index or name) holding the class scores; default: the first "
        "[N, classes] tensor, \"out\" of a dict");
    repeatable(command, "--ops-library", o.operatorLibraries, "load a custom-operator library first (repeatable)");
    command->add_option("--threads", o.threads, "intra-op CPU threads; 0: one per core")
        ->check(CLI::Range(0, 4096))
        ->capture_default_str();
    command->footer("\n" + about + SpecHelp);
}

void addTarget(CLI::App* command, CliOptions& o, std::string& box)
{
    command
        ->add_option("--target", o.target,
            "class whose score (summed over the batch) gradients are taken of; segmentation: summed over "
            "its pixels; detection: the detection's number (0: highest score); -1: the predicted class")
        ->check(CLI::Range(int64_t{-1}, std::numeric_limits<int64_t>::max()));
    command->add_option("--target-box", box, "X0,Y0,X1,Y1: segmentation: sum the class's score over this box");
}

void addJobTimeout(CLI::App* command, CliOptions& o)
{
    command
        ->add_option("--job-timeout", o.jobTimeout,
            "under torchrun: seconds a rank waits for the others (to start, and at each step) before the job fails")
        ->check(CLI::Range(1, 86400))
        ->capture_default_str();
}

// The options every attribution command shares: attribute, evaluate and sanity.
void addAttributionOptions(CLI::App* command, CliOptions& o, std::string& box)
{
    repeatable(command, "--input", o.inputs, "images, folders of images, or one tensor file [N, C, H, W]")->required();
    repeatable(command, "--method", o.methods, join(namesOf(attributionMethodChoices()), ", ") + " (repeatable)")
        ->required()
        ->check(CLI::IsMember(namesOf(attributionMethodChoices())));
    command->add_option("--layer", o.camLayer, "the layer methods' layer");
    addTarget(command, o, box);
    command->add_option("--probe", o.probeTarget,
        "FILE.pt or FILE.pt@LAYER: explain a probe's class (probe train writes them) instead of the model's; "
        "--target is then the probe's class");
    command->add_option("--steps", o.attributionSteps, "integrated_gradients: points on the path")
        ->check(CLI::Range(1, 100000))
        ->capture_default_str();
    command->add_option("--rule", o.rule, "integrated_gradients: the integration rule, as Captum names them")
        ->check(
            CLI::IsMember({"gausslegendre", "riemann_left", "riemann_right", "riemann_middle", "riemann_trapezoid"}))
        ->capture_default_str();
    command
        ->add_option("--baseline", o.baseline,
            "integrated_gradients' path start: black (zeros), blur (Gaussian, --blur-sigma), noise (uniform over "
            "the image's range, --seed), or an image / tensor file (one for all or one per input)")
        ->capture_default_str();
    command
        ->add_option("--blur-sigma", o.blurSigma, "the blur's sigma in pixels (default: a tenth of the shorter side)")
        ->check(CLI::PositiveNumber);
    command->add_option("--samples", o.samples, "smoothgrad, smoothgrad_sq, vargrad: noisy copies per image")
        ->check(CLI::Range(1, 100000))
        ->capture_default_str();
    command->add_option("--noise", o.noise, "their noise's sigma as a fraction of the input's range")
        ->check(CLI::Range(0.0, 100.0))
        ->capture_default_str();
    command->add_option("--seed", o.seed, "random seed of the noise (image i draws with seed + i)")
        ->check(CLI::NonNegativeNumber)
        ->capture_default_str();
    command->add_option("--window", o.window, "occlusion: the square's side in pixels, over all channels")
        ->check(CLI::Range(1, 1 << 16))
        ->capture_default_str();
    command->add_option("--stride", o.stride, "occlusion: how far the square moves, at most --window")
        ->check(CLI::Range(1, 1 << 16))
        ->capture_default_str();
    command->add_option("--memory-mb", o.memoryMb, "the memory one batch of evaluated inputs may take")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
}

} // namespace

std::string bundledDemoModel()
{
    // Installed next to the binary (../share/torchscope), else the source tree it was built from.
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    const std::filesystem::path installed
        = exe.parent_path().parent_path() / "share/torchscope/face/face_expression.pt";
    if (!ec && std::filesystem::exists(installed))
        return installed.string();
    return std::string(TORCHSCOPE_RESOURCES_DIR) + "/face/face_expression.pt";
}

CliOptions parseCommandLine(int argc, char** argv)
{
    CliOptions o;
    std::string box;
    std::string range;
    CLI::App app{Overview, "torchscope-cli"};
    app.require_subcommand(0, 1);
    app.set_version_flag("--version",
        "torchscope-cli " TORCHSCOPE_VERSION " (LibTorch " + std::to_string(TORCH_VERSION_MAJOR) + "."
            + std::to_string(TORCH_VERSION_MINOR) + "." + std::to_string(TORCH_VERSION_PATCH) + ")");

    CLI::App* inspect = app.add_subcommand("inspect", "print the module tree (and output shapes with --input)");
    addModelOptions(inspect, o);
    repeatable(inspect, "--input", o.inputs, "image, folder or tensor .pt for a dry run that adds output shapes");
    inspect->add_flag("--json", o.json, "print JSON");

    CLI::App* analyses = app.add_subcommand(
        "analyses", "list the analyses: the table the window, the commands and the tests read (no model needed)");
    analyses->add_flag("--json", o.json, "print JSON (else a Markdown table)");

    CLI::App* setup = app.add_subcommand("setup", "print the input setup and what the model says about its input");
    addModelOptions(setup, o,
        "What the model says: the first convolution's channels, the last layer's outputs, "
        "input sizes that run.\n--out writes a copy of the model with the setup stored in it.\n");
    setup->add_option("--out,-o", o.out, "COPY.pt: the model with the setup as its torchscope.json");

    CLI::App* run = app.add_subcommand("run", "run the model on inputs and write what it grabbed");
    addModelOptions(
        run, o, "Writes FILE.pt (one dictionary for torch.load), FILE.npz (numpy.load) or FILE.safetensors.\n");
    repeatable(run, "--input", o.inputs,
        "an image, a folder of images, or a tensor .pt saved by torch.save (the batch as it is; one .pt "
        "per argument for several-input models)")
        ->required();
    run->add_option("--out,-o", o.out, "FILE.pt, FILE.npz or FILE.safetensors")->required();
    repeatable(run, "--grab", o.grabs, "what to record (repeatable; see below)");
    repeatable(run, "--edit", o.edits, "change an activation during the run (repeatable; see below)");
    run->add_option("--truncate", o.truncate, "stop after PATH's first call and return its output as \"output\"");
    addTarget(run, o, box);
    repeatable(run, "--probe", o.probes, "NAME=PROBE.pt[@LAYER]: add the probe's scores as \"probe:NAME\"");
    run->add_flag("--probe-only", o.probeOnly, "stop after the last probed layer; leave out the model's output");
    run->add_flag("--each-image", o.eachImage,
        "run the images one at a time, as the window does: any sizes mix, an unreadable image is skipped with a "
        "warning, and each grab's values are concatenated along dim 0");

    CLI::App* gradcam = app.add_subcommand("gradcam", "Grad-CAM and saliency maps of images at a layer");
    addModelOptions(gradcam, o,
        "Grad-CAM (Selvaraju et al.): the target score's gradient at --layer, averaged over positions, weighs\n"
        "the layer's channels; their weighted sum, ReLU. Saliency: max over input channels of |d score / d input|.\n"
        "Each image runs on its own and is explained for its own class unless --target names one.\n"
        "Writes FILE.pt/.npz/.safetensors: \"gradcam\" [N, H, W] (the input's size), \"gradcam_layer\"\n"
        "[N, h, w], \"saliency\" [N, H, W], \"target\" [N]; maps of images of different sizes as KEY/i.\n");
    repeatable(gradcam, "--input", o.inputs, "an image or a folder of images (repeatable)")->required();
    gradcam->add_option("--layer", o.layer, "the module whose output Grad-CAM weighs")->required();
    addTarget(gradcam, o, box);
    gradcam->add_option("--out,-o", o.out, "FILE.pt, FILE.npz or FILE.safetensors")->required();

    CLI::App* attribute = app.add_subcommand("attribute", "attributions: which input values drove the score");
    addModelOptions(attribute, o,
        "Input methods (as Captum computes them): saliency (|d score / d input|), input_x_gradient,\n"
        "integrated_gradients (Sundararajan et al. 2017: from --baseline, the path integral by --rule with\n"
        "--steps points), smoothgrad, smoothgrad_sq, vargrad (the gradient over --samples noisy copies,\n"
        "sigma = --noise times the input's range, image i seeded --seed + i), occlusion (the mean score drop\n"
        "when a --window square, moved by --stride, is filled with 0). Layer methods (as pytorch-grad-cam\n"
        "computes them) at --layer: grad_cam, grad_cam_pp, hires_cam, xgrad_cam, layer_cam, score_cam,\n"
        "eigen_cam (no gradient: any output). Many inputs are evaluated in batches under --memory-mb.\n"
        "Each image is explained for its own predicted class unless --target names one. Writes\n"
        "FILE.pt/.npz/.safetensors: for each method M a float32 [N, C, H, W] tensor \"M\" (the model's\n"
        "input size; a layer method [N, 1, h, w] at the layer and \"M:input\" upsampled to the input),\n"
        "\"targets\" (int64 [N]), \"integrated_gradients:delta\" ([N]: the attributions' sum minus the\n"
        "score's change from the baseline) and, unless black, \"integrated_gradients:baseline\".\n");
    addAttributionOptions(attribute, o, box);
    attribute->add_option("--out,-o", o.out, "FILE.pt, FILE.npz or FILE.safetensors")->required();

    CLI::App* attention = app.add_subcommand("attention", "where a vision transformer's heads look");
    addModelOptions(attention, o,
        "The attention probabilities of every module that computes attention (the module tree marks them;\n"
        "--layer picks some): scaled_dot_product_attention, nn.MultiheadAttention (need_weights=False and\n"
        "its fast path included) or an explicit softmax(q kᵀ·s + b), computed beside the model's own kernel.\n"
        "Methods: heads (\"PATH:attention\" [N, H, Q, K], \"PATH:maps\" [N, H, h, w]: the --query token's\n"
        "attention over the h x w patches, \"PATH:entropy\" and \"PATH:distance\" [N, H]: each head's entropy\n"
        "and mean attention distance in pixels), rollout (Abnar & Zuidema: heads fused by --head-fusion, the\n"
        "lowest --discard fraction dropped, 0.5 A + 0.5 I; \"rollout\" [N, 1, h, w]), legrad (Bousselham et\n"
        "al., as torchcam: \"legrad\" [N, 1, h, w] for --target or each image's predicted class, \"targets\").\n"
        "The class token is the first; register tokens after it and models without one are said so.\n");
    repeatable(attention, "--input", o.inputs, "images, folders of images, or one tensor file [N, C, H, W]")
        ->required();
    repeatable(attention, "--layer", o.attentionLayers, "attention module path, glob or type:NAME (repeatable)");
    repeatable(attention, "--method", o.attentionMethods, "heads (default), rollout or legrad (repeatable)")
        ->check(CLI::IsMember({"heads", "rollout", "legrad"}));
    attention->add_option("--query", o.query, "the query token of the maps: cls (the class token) or an index")
        ->capture_default_str();
    attention->add_option("--head-fusion", o.headFusion, "rollout: mean, max or min over the heads")
        ->check(CLI::IsMember({"mean", "max", "min"}))
        ->capture_default_str();
    attention->add_option("--discard", o.discard, "rollout: the fraction of lowest attention set to 0 per layer")
        ->check(CLI::Range(0.0, 0.999))
        ->capture_default_str();
    attention->add_option("--target", o.target, "legrad: the class explained; default: each image's predicted class")
        ->check(CLI::NonNegativeNumber);
    attention->add_option("--patch-size", o.patchSize, "pixels per patch; default: the patch embedding's kernel")
        ->check(CLI::Range(int64_t{1}, int64_t{4096}));
    attention->add_option("--memory-mb", o.memoryMb, "the memory one batch of images may take")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
    attention->add_option("--out,-o", o.out, "FILE.pt, FILE.npz or FILE.safetensors")->required();

    CLI::App* evaluate
        = app.add_subcommand("evaluate", "faithfulness metrics: does each map point at what the model uses?");
    addModelOptions(evaluate, o,
        "Metrics: deletion and insertion (Petsiuk et al. 2018, RISE: the pixels, most important first by the map\n"
        "summed over its channels, are removed from the image (--fill, default zero) or put back into it\n"
        "(starting from --fill, default blur), --pixels-per-step at a time; the area under the target's\n"
        "softmax probability curve), road_morf and road_lerf (Rong et al. 2022: the most / least relevant pixels\n"
        "above each percentile 10 ... 90 imputed from their neighbours with N(0, 0.01²) noise, image i seeded\n"
        "--seed + i; the mean change of the probability, as pytorch-grad-cam's ROAD...Average), average_drop and\n"
        "increase_confidence (Chattopadhay et al. 2018: the image\n"
        "times the map scaled to [0, 1]; drop max(0, p - p') / p in percent, increase 100 when p' > p). The\n"
        "maps are made as `attribute` makes them, or read from --attributions (keys as attribute writes them;\n"
        "a layer method's \"M:input\" first). Writes FILE.json (per image, mean and sd per method and metric,\n"
        "the deletion / insertion curves) or FILE.csv (method, metric, image, value; mean and sd rows).\n");
    addAttributionOptions(evaluate, o, box);
    repeatable(evaluate, "--metric", o.metrics, join(namesOf(faithfulnessMetricChoices()), ", ") + " (repeatable)")
        ->required()
        ->check(CLI::IsMember(namesOf(faithfulnessMetricChoices())));
    evaluate->add_option(
        "--attributions", o.attributions, "score the maps in FILE.npz / FILE.pt instead of making them");
    evaluate
        ->add_option("--pixels-per-step", o.pixelsPerStep,
            "deletion, insertion: pixels changed per step (default: a hundredth of the image)")
        ->check(CLI::PositiveNumber);
    evaluate->add_option("--fill", o.fill, "what deleted pixels become and insertion starts from: zero, blur or mean")
        ->check(CLI::IsMember({"zero", "blur", "mean"}));
    evaluate->add_option("--out,-o", o.out, "FILE.json or FILE.csv")->required();

    CLI::App* sanity
        = app.add_subcommand("sanity", "sanity checks: do the maps change when the weights are randomised?");
    addModelOptions(sanity, o,
        "The model-parameter randomisation test (Adebayo et al. 2018) on a copy of the model: cascading (the\n"
        "layers re-initialised from the output down, each added to those before) or independent (one layer\n"
        "at a time). Layers: Linear, convolutions and normalisation, re-initialised as PyTorch's\n"
        "reset_parameters() does, each from a generator seeded --seed + 1 (as Quantus's MPRT). Each randomised\n"
        "map is compared with the original, for the class the original model explained: Spearman's rank\n"
        "correlation of the absolute and the signed maps, and SSIM of the maps summed over their channels.\n"
        "Writes FILE.json ({\"method\", \"mode\", \"layers\": [{\"layer\", \"spearman_abs\", \"spearman\", \"ssim\",\n"
        "...}]}, a list of those for several methods) or FILE.csv; --maps FILE.npz keeps every map\n"
        "(\"M/original\", \"M/LAYER\").\n");
    addAttributionOptions(sanity, o, box);
    sanity->add_option("--mode", o.mode, "cascading or independent")
        ->check(CLI::IsMember({"cascading", "independent"}))
        ->default_str("cascading");
    sanity->add_option("--maps", o.mapsOut, "FILE.npz, .pt or .safetensors: the original and every randomised map");
    sanity->add_option("--out,-o", o.out, "FILE.json or FILE.csv")->required();

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
    patch->add_option("--channels", o.ablateChannels, "ablate: C1,C2,... of --layer");
    patch->add_option("--compare", o.compareLayer, "a later layer whose output each run also gives");
    repeatable(patch, "--edit", o.edits, "zero or scale channels in every run (PATH:zero:C,.. PATH:scale:C,..:F)");
    patch->add_option("--out,-o", o.out, "FILE.pt, FILE.npz or FILE.safetensors");

    CLI::App* record
        = app.add_subcommand("record", "stream many images through the model and fold what the grabs take");
    addModelOptions(record, o,
        "Streams image folders (one subfolder per class gives true labels) or a tensor file through the model.\n"
        "Writes FILE.pt/.npz/.safetensors, or DIR with one .pt per layer, a CSV of per-channel statistics\n"
        "and a summary. Ctrl+C stops and keeps what was recorded.\n");
    repeatable(record, "--input", o.inputs,
        "image folders and images, or one tensor .pt ([N, ...] or {\"samples\", \"labels\", \"classes\"})")
        ->required();
    repeatable(record, "--grab", o.grabs, "what to record (repeatable; see below)")->required();
    record->add_option("--out,-o", o.out, "DIR or FILE.pt/.npz/.safetensors")->required();
    repeatable(record, "--edit", o.edits, "zero or scale channels in every forward (an ablated model's statistics)");
    addTarget(record, o, box);
    record->add_option("--reduce", o.reduce, "how samples are folded")
        ->check(CLI::IsMember({"none", "sum", "mean", "max", "min", "stats"}))
        ->capture_default_str();
    record
        ->add_option("--condition", o.condition, "which samples count: all, true:L,.., predicted:L,.., correct, wrong")
        ->capture_default_str();
    record->add_option("--batch", o.batch, "samples per forward pass")
        ->check(CLI::Range(1, 65536))
        ->capture_default_str();
    record->add_option("--memory-cap", o.memoryCapMiB, "MiB kept by --reduce none")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 30))
        ->capture_default_str();
    record->add_option("--bins", o.bins, "histogram bins")->check(CLI::Range(1, 1 << 20))->capture_default_str();
    record->add_option("--range", range, "LO:HI: the histogram's range (default: from the first batch)");
    record->add_option("--topk", o.topK, "samples kept per channel as the most activating")
        ->check(CLI::Range(0, 100000))
        ->capture_default_str();
    record->add_option("--decode-threads", o.decodeThreads, "image decoding threads; 0: automatic")
        ->check(CLI::Range(0, 1024))
        ->capture_default_str();
    addJobTimeout(record, o);

    CLI::App* probe = app.add_subcommand("probe", "train linear probes on layer outputs (probe train, probe sweep)");
    probe->require_subcommand(1);
    CLI::App* train = probe->add_subcommand("train", "train a linear probe on one layer's output");
    CLI::App* sweep = probe->add_subcommand("sweep", "the same probe on every layer the --layer specs select");
    for (CLI::App* command : {train, sweep}) {
        addModelOptions(command, o,
            command == train ? "Prints train and validation accuracy. PROBE.pt is TorchScript: "
                               "torch.jit.load(PROBE.pt)(activations).\n"
                             : "Prints one line per layer: path, validation accuracy.\n");
        auto* layer = repeatable(command, "--layer", o.layers, "layer path (sweep: specs, globs allowed; repeatable)")
                          ->required();
        if (command == train)
            layer->expected(1);
        command->add_option("--data", o.data, "DIR (one subfolder per class) or FILE.pt {\"samples\", \"labels\"}")
            ->required();
        command->add_option("--pool", o.pool, "how maps become features")
            ->check(CLI::IsMember({"avg", "flatten"}))
            ->capture_default_str();
        command->add_option("--seed", o.seed, "the random seed of the split and the training")->capture_default_str();
        command->add_option("--validation", o.validation, "the share of samples held out")
            ->check(OpenFraction)
            ->capture_default_str();
        command->add_option(
            "--cache", o.cache, "DIR for cached activations, or none; default: $XDG_CACHE_HOME/torchscope/activations");
        command->add_option("--batch", o.batch, "samples per forward pass")
            ->check(CLI::Range(1, 65536))
            ->capture_default_str();
        command->add_flag("--json", o.json, "print JSON");
        addJobTimeout(command, o);
    }
    train->add_option("--out,-o", o.out, "PROBE.pt")->required();
    train->add_option("--state-dict", o.stateDict, "FILE.pt: the probe's tensors as well");
    sweep->add_option("--csv", o.csv, "FILE.csv: the sweep's table");

    CLI::App* compare
        = app.add_subcommand("compare", "compare two models, two checkpoints or two precisions layer by layer");
    addModelOptions(compare, o,
        "Modes:\n"
        "  cka          linear CKA for every pair of A's and B's layers (any architectures; without MODEL_B, A\n"
        "               against itself), streamed batch by batch with the unbiased HSIC (Nguyen et al. 2021)\n"
        "  checkpoints  two checkpoints of one architecture on the same inputs: per layer CKA, cosine,\n"
        "               relative L2 and the first layer whose CKA falls below --threshold (default 0.99)\n"
        "  precision    MODEL in float64 on the CPU against --precision (default: float32, bfloat16 and,\n"
        "               with a GPU, cuda float32/float16/bfloat16): per layer max absolute and relative\n"
        "               error, and the first layer whose relative L2 error exceeds --threshold (default 1e-3)\n"
        "Both models get MODEL's input setup. Writes FILE.pt (torch.load), FILE.json or FILE.csv.\n");
    compare->add_option("model_b", o.modelB, "the second TorchScript file (cka, checkpoints)");
    compare->add_option("--mode", o.mode, "cka, checkpoints or precision (default: cka with MODEL_B, else precision)")
        ->check(CLI::IsMember({"cka", "checkpoints", "precision"}));
    repeatable(compare, "--input", o.inputs, "image folders and images, or one tensor .pt ([N, ...])")->required();
    repeatable(compare, "--layer", o.layers, "layers of MODEL to compare (paths, globs, type:X; repeatable)")
        ->required();
    repeatable(compare, "--layer-b", o.layersB, "cka: layers of MODEL_B (default: the --layer specs)");
    repeatable(compare, "--precision", o.precisions, "precision: [DEVICE:]DTYPE to compare with float64 (repeatable)");
    compare->add_option("--threshold", o.threshold, "where two runs part (see the modes)");
    compare->add_flag("--pooled", o.pooled, "CKA on each channel's spatial mean instead of every value");
    compare->add_flag("--maps", o.maps,
        "instead of comparing: the one image of --input through --layer of A and --layer-b of B (precision: "
        "float64 against the first --precision), written as keys a and b to --out (FILE.pt, .npz, .safetensors)");
    compare->add_option("--out,-o", o.out, "FILE.pt, FILE.json or FILE.csv");
    compare->add_option("--batch", o.batch, "samples per forward pass (CKA needs 4 or more)")
        ->check(CLI::Range(1, 4096)) // a float64 Gram matrix per layer is batch²
        ->capture_default_str();
    compare->add_option("--decode-threads", o.decodeThreads, "image decoding threads; 0: automatic")
        ->check(CLI::Range(0, 1024))
        ->capture_default_str();

    CLI::App* visualize
        = app.add_subcommand("visualize", "optimise images that excite a layer's channels (feature visualisation)");
    addModelOptions(visualize, o,
        "Activation maximisation (Olah et al., Distill 2017): an image parameterised as a 1/f-scaled\n"
        "spectrum (--param fft) or as pixels, colours decorrelated, jittered, scaled and rotated at random\n"
        "each step, optimised with Adam for --steps. Images get MODEL's input setup (size, values).\n"
        "One image: --out FILE.png (or FILE.pt). Several channels: --out FOLDER with one PNG per image,\n"
        "sheet.png and index.html (contact sheets; with --data, beside each channel's top --top images of\n"
        "that folder) and visualization.json. Deterministic on the CPU for a --seed; several channels\n"
        "are optimised --batch at a time, batch k with seed + k.\n");
    visualize->add_option("--layer", o.layer, "the module path to visualise")->required();
    visualize->add_option("--channels,--channel", o.channels, "C, FIRST-LAST, C1,C2,... or all (probe: its class)")
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

    CLI::App* help = app.add_subcommand("help", "Print this help");

    try {
        app.parse(argc, argv);
        if (argc < 2 || help->parsed()) {
            o.command = "help";
            o.helpText = app.help();
            return o;
        }
        if (!box.empty())
            o.targetBox = toBox("--target-box", box);
        if (!range.empty())
            o.range = toRange("--range", range);
    } catch (const CLI::CallForVersion& e) {
        o.command = "help";
        o.helpText = e.what() + std::string("\n");
        return o;
    } catch (const CLI::CallForHelp&) {
        o.command = "help";
        o.helpText = app.help(); // the help of the command asked about, named with its parents
        return o;
    } catch (const CLI::ParseError& e) {
        CLI::App* failed = &app; // the deepest command the parser entered
        for (CLI::App* command : {inspect, analyses, setup, run, gradcam, attribute, attention, evaluate, sanity, patch,
                 record, probe, train, sweep, compare, visualize})
            if (command->parsed())
                failed = command;
        if (failed == probe)
            throw UsageError("probe needs a subcommand: probe train or probe sweep\nRun 'torchscope-cli probe --help' "
                             "for the subcommands.");
        if (failed == &app && dynamic_cast<const CLI::ExtrasError*>(&e))
            throw UsageError("unknown command '" + std::string(argv[1])
                + "'; expected inspect, analyses, setup, run, gradcam, attribute, attention, evaluate, sanity, patch, "
                  "record, probe, compare or visualize\nRun "
                  "'torchscope-cli --help' for the commands.");
        const std::string name
            = failed == &app ? "" : (failed->get_parent() == probe ? "probe " : "") + failed->get_name();
        throw UsageError((name.empty() ? "" : name + ": ") + e.what() + "\nRun 'torchscope-cli "
            + (name.empty() ? "" : name + " ") + "--help' for the options.");
    }
    if (o.command.empty()) {
        for (CLI::App* command :
            {inspect, analyses, setup, run, gradcam, attribute, attention, evaluate, sanity, patch, record, compare,
                visualize})
            if (command->parsed())
                o.command = command->get_name();
        if (probe->parsed()) {
            o.command = "probe";
            o.subcommand = train->parsed() ? "train" : "sweep";
        }
    }
    if (o.model.empty())
        o.model = bundledDemoModel();
    return o;
}

} // namespace torchscope::cli
