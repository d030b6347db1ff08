#include "cli_options.h"

#include <cstdlib>
#include <filesystem>
#include <map>

namespace torchscope::cli {
namespace {

int64_t toInteger(const std::string& flag, const std::string& value)
{
    char* end = nullptr;
    const long long n = std::strtoll(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0')
        throw UsageError(flag + " expects an integer, got '" + value + "'");
    return n;
}

double toFraction(const std::string& flag, const std::string& value)
{
    char* end = nullptr;
    const double x = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0' || !(x > 0.0 && x < 1.0))
        throw UsageError(flag + " expects a fraction between 0 and 1, got '" + value + "'");
    return x;
}

// "x0,y0,x1,y1"
std::array<int64_t, 4> toBox(const std::string& flag, const std::string& value)
{
    std::array<int64_t, 4> box{};
    size_t start = 0;
    for (size_t i = 0; i < 4; ++i) {
        const size_t comma = value.find(',', start);
        if ((i < 3) == (comma == std::string::npos))
            throw UsageError(flag + " expects X0,Y0,X1,Y1 (four integers), got '" + value + "'");
        box[i] = toInteger(flag, value.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        start = comma + 1;
    }
    return box;
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

std::string usage()
{
    return R"(usage:
  torchscope-cli inspect [MODEL] [--json] [--input PATH ...]
      Prints the module tree: path, type, parameters, calls (and output shapes with --input).
  torchscope-cli setup [MODEL] [--preprocess FILE.json] [--labels FILE] [--scores ELEMENT] [--out COPY.pt]
      Prints the model's input setup and what the model says about its input (the first
      convolution's channels, the last layer's outputs, input sizes that run); with --out, writes
      a copy of the model with the setup stored as its torchscope.json.
  torchscope-cli run MODEL --input PATH [--input PATH ...] --out FILE.pt
                 [--grab SPEC ...] [--truncate PATH] [--edit SPEC ...] [--target INDEX]
                 [--device auto|cpu|cuda] [--preprocess none|imagenet|FILE.json]
      Runs the model and writes what it recorded: FILE.pt (one dictionary for torch.load),
      FILE.npz (numpy.load) or FILE.safetensors.
  torchscope-cli record MODEL --input DIR --grab SPEC ... --out DIR|FILE
                 [--reduce none|sum|mean|max|min|stats] [--condition all|true:L,..|predicted:L,..|correct|wrong]
                 [--batch 16] [--memory-cap MiB] [--bins 64] [--range LO:HI] [--topk 9] [--decode-threads N]
      Streams a folder (one subfolder per class for true labels) through the model and folds
      what the grabs take: FILE.pt/.npz/.safetensors, or DIR with one .pt per layer, a CSV of
      per-channel statistics and a summary. Ctrl+C stops and keeps what was recorded.
  torchscope-cli probe train MODEL --layer PATH --data DIR|FILE.pt --out PROBE.pt [--state-dict FILE.pt]
                 [--pool avg|flatten] [--seed N] [--validation 0.25] [--cache DIR|none] [--json]
      Trains a linear probe on the layer's output for the labelled images in DIR (one subfolder
      per class) and prints train and validation accuracy. PROBE.pt is TorchScript
      (torch.jit.load(PROBE.pt)(activations) in Python); --state-dict also writes its tensors.
  torchscope-cli probe sweep MODEL --layer SPEC [--layer SPEC ...] --data DIR|FILE.pt [--csv FILE]
      The same probe on every layer SPEC selects: one line per layer (path, validation accuracy).
  Activations are grabbed once and cached (keyed by the model file's hash, layer, pooling,
  preprocessing and data) in $XDG_CACHE_HOME/torchscope/activations unless --cache says otherwise.
  run ... --probe NAME=PROBE.pt[@LAYER] [--probe-only] adds each probe's scores as "probe:NAME";
  --probe-only stops the forward after the last probed layer and leaves out the model's output.
  Without MODEL, the bundled demo model (face-api.js's face-expression network) is used.

  --input PATH     an image, a folder of images, or a tensor .pt saved by torch.save (used as
                   the batch as it is; give one .pt per argument for several-input models)
  --grab SPEC      PATH (every call's output: PATH, PATH#1, ...), PATH:in0, PATH:in1 (inputs),
                   PATH:grad (gradient of the --target class score); PATH may be a glob
                   ("layer3.*") or "type:Conv2d"
  --truncate PATH  stop after PATH's first call and return its output as "output"
  --edit SPEC      PATH:zero:C1,C2  PATH:scale:C1,C2:FACTOR  PATH:add:FILE.pt  PATH:replace:FILE.pt
  --target INDEX   class index whose score (summed over the batch) gradients are taken of; for
                   segmentation the class's score summed over its pixels; for detection models the
                   detection's number (0: the highest score); -1: the predicted class
  --target-box X0,Y0,X1,Y1  segmentation: sum the class's score over this box instead
  --device D       auto (CUDA when available), cpu, cuda, cuda:N
  --preprocess P   the input setup: none, imagenet, or a JSON file ({"preprocess": {"resize": 256,
                   "crop": 224, "grayscale": false, "scale": 1, "channel_order": "RGB", "mean":
                   [...], "std": [...]}, "labels": [...], "scores": "logits"}, or only the
                   preprocess object); default: the model's torchscope.json, else imagenet
  --labels FILE    class names: one per line, or a JSON list
  --scores E       which element of a tuple, namedtuple or dict output holds the class scores
                   (index or name; default: the first [N, classes] tensor, "out" of a dict)
  --ops-library F  load a custom-operator library first (repeatable)
  --threads N      intra-op CPU threads (default: one per core)
)";
}

CliOptions parseCommandLine(int argc, char** argv)
{
    CliOptions options;
    std::vector<std::string> args(argv + 1, argv + argc);
    if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
        options.command = "help";
        return options;
    }
    options.command = args[0];
    if (options.command != "inspect" && options.command != "setup" && options.command != "run"
        && options.command != "record" && options.command != "probe")
        throw UsageError("unknown command '" + options.command + "'; expected inspect, setup, run, record or probe");
    size_t first = 1;
    if (options.command == "probe") {
        if (args.size() < 2 || (args[1] != "train" && args[1] != "sweep"))
            throw UsageError("probe needs a subcommand: probe train or probe sweep");
        options.subcommand = args[1];
        first = 2;
    }

    const std::map<std::string, std::vector<std::string>*> repeated{{"--input", &options.inputs},
        {"--grab", &options.grabs}, {"--edit", &options.edits}, {"--ops-library", &options.operatorLibraries},
        {"--layer", &options.layers}, {"--probe", &options.probes}};
    for (size_t i = first; i < args.size(); ++i) {
        const std::string& arg = args[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= args.size())
                throw UsageError(arg + " needs a value");
            return args[++i];
        };
        if (const auto it = repeated.find(arg); it != repeated.end())
            it->second->push_back(value());
        else if (arg == "--out" || arg == "-o")
            options.out = value();
        else if (arg == "--truncate")
            options.truncate = value();
        else if (arg == "--target")
            options.target = toInteger(arg, value());
        else if (arg == "--device")
            options.device = value();
        else if (arg == "--preprocess")
            options.preprocess = value();
        else if (arg == "--labels")
            options.labels = value();
        else if (arg == "--scores")
            options.scores = value();
        else if (arg == "--target-box")
            options.targetBox = toBox(arg, value());
        else if (arg == "--threads")
            options.threads = static_cast<int>(toInteger(arg, value()));
        else if (arg == "--reduce")
            options.reduce = value();
        else if (arg == "--condition")
            options.condition = value();
        else if (arg == "--batch")
            options.batch = static_cast<int>(toInteger(arg, value()));
        else if (arg == "--decode-threads")
            options.decodeThreads = static_cast<int>(toInteger(arg, value()));
        else if (arg == "--memory-cap")
            options.memoryCapMiB = toInteger(arg, value());
        else if (arg == "--bins")
            options.bins = static_cast<int>(toInteger(arg, value()));
        else if (arg == "--range")
            options.range = value();
        else if (arg == "--topk")
            options.topK = static_cast<int>(toInteger(arg, value()));
        else if (arg == "--json")
            options.json = true;
        else if (arg == "--data")
            options.data = value();
        else if (arg == "--csv")
            options.csv = value();
        else if (arg == "--state-dict")
            options.stateDict = value();
        else if (arg == "--pool")
            options.pool = value();
        else if (arg == "--seed")
            options.seed = toInteger(arg, value());
        else if (arg == "--validation")
            options.validation = toFraction(arg, value());
        else if (arg == "--cache")
            options.cache = value();
        else if (arg == "--probe-only")
            options.probeOnly = true;
        else if (!arg.empty() && arg[0] == '-')
            throw UsageError("unknown option '" + arg + "'");
        else if (options.model.empty())
            options.model = arg;
        else
            throw UsageError("unexpected argument '" + arg + "'");
    }
    if (options.model.empty())
        options.model = bundledDemoModel();
    if (options.command == "run" || options.command == "record") {
        if (options.inputs.empty())
            throw UsageError(options.command + " needs at least one --input");
        if (options.out.empty())
            throw UsageError(
                options.command + " needs --out " + (options.command == "run" ? "FILE.pt" : "DIR or FILE"));
    }
    if (options.command == "record" && options.grabs.empty())
        throw UsageError("record needs at least one --grab");
    if (options.command == "probe") {
        if (options.layers.empty())
            throw UsageError("probe " + options.subcommand + " needs --layer");
        if (options.subcommand == "train" && options.layers.size() != 1)
            throw UsageError("probe train takes one --layer (probe sweep takes several)");
        if (options.data.empty())
            throw UsageError("probe " + options.subcommand + " needs --data DIR (one subfolder per class) or FILE.pt");
        if (options.subcommand == "train" && options.out.empty())
            throw UsageError("probe train needs --out PROBE.pt");
    }
    return options;
}

} // namespace torchscope::cli
