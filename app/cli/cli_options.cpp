#include "cli_options.h"

#include "relevance/relevance_rules.h"

#include "attribution/attribution_names.h"
#include "common/strings.h"
#include "model/file_diagnosis.h"

#include <CLI/CLI.hpp>
#include <torch/version.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>
#include <regex>

namespace torchscope::cli {
namespace {

constexpr const char* Overview
    = R"(TorchScope's command line: look inside a TorchScript model (.pt from torch.jit.script or
torch.jit.trace) or a torch.export program (.pt2 from torch.export.save) without Python hooks.
Without MODEL, the bundled demo model (face-api.js's face-expression network) is used. Run
'torchscope-cli COMMAND --help' for a command's options.
)";

constexpr const char* SpecHelp = R"(
Grab specs: PATH (every call's output: PATH, PATH#1, ...), PATH:in0, PATH:in1 (inputs), PATH:grad
(gradient of the --target score), PATH:attention (the attention probabilities [N, heads, queries,
keys] the module computes, even fused); PATH may be a glob ("layer3.*") or "type:Conv2d".
Edit specs: PATH:zero:C1,C2  PATH:scale:C1,C2:FACTOR  PATH:add:FILE.pt  PATH:replace:FILE.pt
PATH:sae:DIR:ablate:L1,L2  PATH:sae:DIR:scale:L1,L2:FACTOR  PATH:sae:DIR:steer:L1:AMOUNT (a saved SAE
spliced in with those latents edited, its error term kept: sae train)
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

// A finite number, all of `text`.
std::optional<double> finiteNumber(const std::string& text)
{
    try {
        size_t used = 0;
        const double x = std::stod(text, &used);
        if (used == text.size() && std::isfinite(x))
            return x;
    } catch (const std::exception&) { }
    return std::nullopt;
}

std::optional<int64_t> integer(const std::string& text)
{
    try {
        size_t used = 0;
        const long long n = std::stoll(text, &used);
        if (used == text.size())
            return n;
    } catch (const std::exception&) { }
    return std::nullopt;
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

// "LO:HI" with LO < HI, both finite (CLI11 names the option before the message).
const CLI::Validator RangeCheck(
    [](std::string& text) -> std::string {
        const auto parts = splitAt(text, ':');
        if (parts.size() != 2)
            return "expected LO:HI (two numbers), got '" + text + "'";
        for (const auto& part : parts)
            if (!finiteNumber(part))
                return "expected a finite number, got '" + part + "'";
        if (!(*finiteNumber(parts[0]) < *finiteNumber(parts[1])))
            return "LO must be below HI, got '" + text + "'";
        return "";
    },
    "LO:HI");

// "X0,Y0,X1,Y1": a box of at least one pixel, corners not negative.
const CLI::Validator BoxText(
    [](std::string& text) -> std::string {
        const auto parts = splitAt(text, ',');
        if (parts.size() != 4)
            return "expected X0,Y0,X1,Y1 (four integers), got '" + text + "'";
        std::array<int64_t, 4> box{};
        for (size_t i = 0; i < 4; ++i) {
            const auto n = integer(parts[i]);
            if (!n)
                return "expected an integer, got '" + parts[i] + "'";
            box[i] = *n;
        }
        if (box[0] < 0 || box[1] < 0 || box[2] <= box[0] || box[3] <= box[1])
            return "expected 0 <= X0 < X1 and 0 <= Y0 < Y1, got '" + text + "'";
        return "";
    },
    "X0,Y0,X1,Y1");

} // namespace

const CLI::Validator RangeText = RangeCheck;

const CLI::Validator OpenFraction(
    [](std::string& value) -> std::string {
        const auto x = finiteNumber(value);
        return x && *x > 0.0 && *x < 1.0 ? "" : "expected a fraction between 0 and 1 (exclusive), got '" + value + "'";
    },
    "(0 - 1)");

// One value per occurrence ("--grab a --grab b"; "--grab a b" would take MODEL for a grab), except
// --input, which takes every path up to the next option as well, as a shell expands "--input *.png".
// A model file among the inputs (MODEL written after them) is refused after parsing.
CLI::Option* repeatable(
    CLI::App* command, const std::string& name, std::vector<std::string>& values, const std::string& description)
{
    const bool paths = name == "--input";
    return command
        ->add_option(name, values, description + (paths ? " (several after one --input, as *.png gives)" : ""))
        ->allow_extra_args(paths);
}

// What every command that opens a model takes.
void addModelOptions(CLI::App* command, CliOptions& o, const std::string& about)
{
    command->add_option("model", o.model, "TorchScript (.pt) or torch.export (.pt2) file (default: the bundled demo)");
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

void addTarget(CLI::App* command, CliOptions& o)
{
    command
        ->add_option("--target", o.target,
            "class whose score (summed over the batch) gradients are taken of; segmentation: summed over "
            "its pixels; detection: the detection's number (0: highest score); -1: the predicted class")
        ->check(CLI::Range(int64_t{-1}, std::numeric_limits<int64_t>::max()));
    command
        ->add_option("--target-box", o.targetBoxText, "X0,Y0,X1,Y1: segmentation: sum the class's score over this box")
        ->check(BoxText);
}

void addDistributedTimeout(CLI::App* command, CliOptions& o)
{
    command
        ->add_option("--job-timeout", o.jobTimeout,
            "under torchrun: seconds a rank waits for the others (to start, and at each step) before the job fails")
        ->check(CLI::Range(1, 86400))
        ->capture_default_str();
}

void addLrpOptions(CLI::App* command, CliOptions& o)
{
    command
        ->add_option("--composite", o.composite,
            "lrp: the rules by layer, as Zennit's composites: " + join(compositeNames(), ", ")
                + " (epsilon_gamma_box's zbox bounds come from the input setup)")
        ->check(CLI::IsMember(compositeNames()))
        ->capture_default_str();
    command
        ->add_option("--attention-rule", o.attentionRule,
            "lrp: how relevance crosses attention, as LXT defines it: cp (CP-LRP: the attention weights held "
            "fixed, relevance through the values) or attnlrp (AttnLRP: the uniform rule on q·k and A·v, the "
            "softmax by gradient × input)")
        ->check(CLI::IsMember(attentionRuleNames()))
        ->capture_default_str();
}

// The options every attribution command shares: attribute, evaluate and sanity.
void addAttributionOptions(CLI::App* command, CliOptions& o)
{
    repeatable(command, "--input", o.inputs, "images, folders of images, or one tensor file [N, C, H, W]")->required();
    repeatable(command, "--method", o.methods, join(namesOf(attributionMethodChoices()), ", ") + " (repeatable)")
        ->required()
        ->check(CLI::IsMember(namesOf(attributionMethodChoices())));
    command->add_option("--layer", o.camLayer, "the layer methods' layer");
    addTarget(command, o);
    command->add_option("--probe", o.probeTarget,
        "FILE.pt or FILE.pt@LAYER: explain a probe's class (probe train writes them) instead of the model's; "
        "--target is then the probe's class");
    command->add_option("--steps", o.attributionSteps, "integrated_gradients: points on the path")
        ->check(CLI::Range(1, 100000))
        ->capture_default_str();
    repeatable(command, "--rule", o.rules,
        "integrated_gradients: the integration rule, as Captum names them (gausslegendre, riemann_left, "
        "riemann_right, riemann_middle, riemann_trapezoid; default gausslegendre); or, for lrp, PATH=RULE "
        "(repeatable): the layers PATH names (a module and what it holds, a glob, type:NAME) take RULE "
        "(epsilon[:e], gamma[:g], zplus, alphabeta[:a:b], flat, wsquare, zbox, norm, gradient) instead of "
        "the composite's")
        ->check(CLI::Validator(
            [](std::string& value) -> std::string {
                static const std::vector<std::string> integration{
                    "gausslegendre", "riemann_left", "riemann_right", "riemann_middle", "riemann_trapezoid"};
                if (value.find('=') != std::string::npos) {
                    try {
                        RuleOverride::parse(value);
                    } catch (const std::exception& e) {
                        return e.what();
                    }
                    return {};
                }
                return std::find(integration.begin(), integration.end(), value) != integration.end()
                    ? std::string()
                    : "'" + value + "' is neither an integration rule (" + join(integration, ", ")
                        + ") nor an lrp rule PATH=RULE";
            },
            "RULE"));
    addLrpOptions(command, o);
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
    command
        ->add_option("--memory-mb", o.memoryMb,
            "the memory one batch of evaluated inputs may take (default: a quarter of the memory available)")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
}

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

namespace {

// The command's words below torchscope-cli ("probe train").
std::string fullName(const CLI::App* command)
{
    std::string name;
    for (; command && command->get_parent(); command = command->get_parent())
        name = command->get_name() + (name.empty() ? "" : " " + name);
    return name;
}

// The deepest command the parser entered.
CLI::App* deepestParsed(CLI::App* app)
{
    for (CLI::App* sub : app->get_subcommands([](CLI::App* s) { return s->parsed(); }))
        return deepestParsed(sub);
    return app;
}

std::string listed(const std::vector<std::string>& names)
{
    std::string text;
    for (size_t i = 0; i < names.size(); ++i)
        text += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
    return text;
}

} // namespace

CliOptions parseCommandLine(int argc, char** argv, const std::vector<Command>& commands)
{
    CliOptions o;
    CLI::App app{Overview, "torchscope-cli"};
    app.require_subcommand(0, 1);
    app.set_version_flag("--version",
        "torchscope-cli " TORCHSCOPE_VERSION " (LibTorch " + std::to_string(TORCH_VERSION_MAJOR) + "."
            + std::to_string(TORCH_VERSION_MINOR) + "." + std::to_string(TORCH_VERSION_PATCH) + ")");
    std::vector<std::pair<std::string, CLI::App*>> defined;
    std::vector<std::string> names;
    for (const auto& command : commands) {
        defined.emplace_back(command.name, command.define(app, o));
        names.push_back(command.name);
    }
    CLI::App* help = app.add_subcommand("help", "Print this help");

    try {
        app.parse(argc, argv);
        if (argc < 2 || help->parsed()) {
            o.command = "help";
            o.helpText = app.help();
            return o;
        }
    } catch (const CLI::CallForVersion& e) {
        o.command = "help";
        o.helpText = e.what() + std::string("\n");
        return o;
    } catch (const CLI::CallForHelp&) {
        o.command = "help";
        o.helpText = app.help(); // the help of the command asked about, named with its parents
        return o;
    } catch (const CLI::ParseError& e) {
        CLI::App* failed = deepestParsed(&app);
        const std::string name = fullName(failed);
        if (failed != &app && failed->get_require_subcommand_min() > 0
            && failed->get_subcommands([](CLI::App* s) { return s->parsed(); }).empty()) {
            std::vector<std::string> subcommands;
            for (const CLI::App* sub : failed->get_subcommands({}))
                subcommands.push_back(name + " " + sub->get_name());
            throw UsageError(name + " needs a subcommand: " + listed(subcommands) + "\nRun 'torchscope-cli " + name
                + " --help' for the subcommands.");
        }
        if (failed == &app && dynamic_cast<const CLI::ExtrasError*>(&e))
            throw UsageError("unknown command '" + std::string(argv[1]) + "'; expected " + listed(names)
                + "\nRun 'torchscope-cli --help' for the commands.");
        throw UsageError((name.empty() ? "" : name + ": ") + e.what() + "\nRun 'torchscope-cli "
            + (name.empty() ? "" : name + " ") + "--help' for the options.");
    }
    for (const auto& [commandName, command] : defined)
        if (command->parsed()) {
            o.command = commandName;
            for (const CLI::App* sub : command->get_subcommands([](CLI::App* s) { return s->parsed(); }))
                o.subcommand = sub->get_name();
        }
    // Checked by their validators as they were parsed.
    if (!o.targetBoxText.empty()) {
        const auto parts = splitAt(o.targetBoxText, ',');
        o.targetBox
            = std::array<int64_t, 4>{*integer(parts[0]), *integer(parts[1]), *integer(parts[2]), *integer(parts[3])};
    }
    if (!o.rangeText.empty()) {
        const auto parts = splitAt(o.rangeText, ':');
        o.range = std::pair<double, double>{*finiteNumber(parts[0]), *finiteNumber(parts[1])};
    }
    // --input takes the paths after it up to the next option: a model written after them is among
    // them, and no model file is an input.
    for (const auto& input : o.inputs)
        if (std::filesystem::is_regular_file(input) && !diagnoseModelFile(input))
            throw UsageError(o.command + ": '" + input
                + "' is a model file, but it comes among the inputs: --input takes every path after it up to "
                  "the next option. Put the model first: torchscope-cli "
                + o.command + " MODEL --input IMAGES...");
    if (o.model.empty())
        o.model = bundledDemoModel();
    return o;
}

} // namespace torchscope::cli
