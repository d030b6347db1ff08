#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace CLI {
class App;
class Option;
class Validator;
} // namespace CLI

namespace torchscope::cli {

struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct CliOptions {
    std::string command; // the Command's name, or "help"
    std::string helpText; // for "help": the help of the command asked about
    std::string subcommand; // probe: "train", "sweep"
    std::string model;
    bool json = false;
    std::vector<std::string> inputs;
    std::vector<std::string> grabs;
    std::vector<std::string> edits; // PATH:zero:C,... | PATH:scale:C,...:F | PATH:add:FILE.pt | PATH:replace:FILE.pt
    std::vector<std::string> operatorLibraries;
    std::optional<std::string> truncate;
    std::optional<int64_t> target;
    std::string out;
    std::string device = "auto";
    std::optional<std::string> preprocess;
    std::optional<std::string> labels; // a text file (one label per line) or JSON
    std::optional<std::string> scores; // the output element with the class scores
    std::optional<std::array<int64_t, 4>> targetBox; // x0,y0,x1,y1: segmentation gradient region
    std::string targetBoxText; // --target-box as given (checked by its validator)
    std::string rangeText; // --range as given (checked by its validator)
    int threads = 0; // 0: one per core (in a torchrun job: the node's cores shared among its ranks)
    int jobTimeout = 300; // seconds a rank of a torchrun job waits for the others
    // record
    std::string reduce = "stats";
    std::string condition = "all";
    int batch = 16;
    int decodeThreads = 0; // 0: automatic
    int64_t memoryCapMiB = 2048;
    int bins = 64;
    std::optional<std::pair<double, double>> range; // --range LO:HI, LO < HI
    int topK = 9;
    // probe
    std::vector<std::string> layers;
    std::string data; // DIR (one subfolder per class) or FILE.pt {"samples", "labels"}
    std::string csv;
    std::string stateDict;
    std::string pool = "avg";
    int64_t seed = 0;
    double validation = 0.25;
    std::string cache; // "" : the user's cache folder; "none": memory only
    // run with probes: NAME=FILE.pt or NAME=FILE.pt@LAYER
    std::vector<std::string> probes;
    bool probeOnly = false;
    bool eachImage = false; // run: one image at a time (the window's run)
    // compare
    std::string modelB;
    std::vector<std::string> layersB;
    std::string mode; // "" : cka with MODEL_B, precision without
    std::vector<std::string> precisions;
    std::optional<double> threshold;
    bool pooled = false;
    bool maps = false; // compare --maps: one image's output of a layer of each run
    // visualize
    std::string layer;
    std::string channels = "0"; // "3", "0-15", "1,5,9", "all"
    std::string neuron; // "Y,X", "centre"; "": the channel's mean
    std::string probeFile;
    std::string direction; // a .pt tensor [C]
    bool negative = false;
    int steps = 512;
    int size = 0;
    std::string param = "fft";
    double learningRate = 0.05;
    double diversity = 0.0;
    int images = 1;
    bool noTransforms = false;
    // patch (mode: "patch", "ablate" or "difference"; layer: the patched layer)
    std::string imageA;
    std::string imageB;
    std::vector<int64_t> ablateChannels; // --channels C1,C2,...
    std::string compareLayer;
    // attribute
    std::vector<std::string> methods;
    int attributionSteps = 50;
    std::string rule = "gausslegendre"; // integrated_gradients': the last --rule without '='
    std::vector<std::string> rules; // --rule as given: an integration rule, or lrp's PATH=RULE
    std::string composite = "epsilon_plus_flat"; // lrp
    std::string attentionRule = "cp"; // lrp
    std::string baseline = "black";
    int64_t memoryMb = 0; // 0: defaultMemoryBudget(), a quarter of the memory available
    std::string camLayer; // attribute --layer
    int window = 8; // occlusion
    int stride = 4;
    double blurSigma = 0.0; // 0: a tenth of the shorter side
    int samples = 25; // smoothgrad, smoothgrad_sq, vargrad
    double noise = 0.15;
    std::string probeTarget; // FILE.pt or FILE.pt@LAYER: explain the probe's class

    // sae train / sae evaluate (--layer: `layers`; --seed, --batch-images: `batch`, --memory-mb shared)
    std::string imageFolder; // the folder the vectors come from
    std::string sae; // sae evaluate: a saved SAE's folder
    std::string expansion = "16"; // sae train: one expansion, or several (8,16,32)
    std::string latents; // sae train: latent counts instead
    int64_t saeK = 32;
    std::string architecture = "topk";
    std::string matryoshka; // W1,W2,...: Matryoshka's prefix widths
    std::string decoderBiasInit = "mean"; // or geometric-median
    std::string vectorCache; // sae train --cache: a folder for the vectors (.npy shards)
    int64_t epochs = 1;
    std::string positions = "all";
    int64_t tokens = 0; // 0: one pass over the folder
    int64_t saeBatch = 4096;
    double saeLearningRate = 4e-4;
    bool resume = false;
    int64_t maxImages = 0;
    int64_t effects = 256; // sae latents
    std::string latentList; // sae latents --latents 1,5,9 (effects of these)

    // concepts make (--out, --seed, --images: `conceptImages`)
    int64_t conceptImages = 200;
    std::string imageSize = "224"; // concepts make --size: S or HxW
    std::string backgrounds;

    // evaluate
    std::vector<std::string> metrics;
    std::string attributions; // FILE.npz, FILE.safetensors or FILE.pt of maps made elsewhere
    int64_t pixelsPerStep = 0; // 0: a hundredth of the image
    std::string fill; // "": zero for deletion, blur for insertion
    // sanity (mode: "cascading" or "independent", shared with compare's --mode)
    std::string mapsOut;
    // attention (--target, --memory-mb and --input shared with attribute)
    std::vector<std::string> attentionLayers;
    std::vector<std::string> attentionMethods; // heads, rollout, legrad
    std::string query = "cls"; // "cls" or a token index
    std::string headFusion = "mean";
    double discard = 0.0;
    int64_t patchSize = 0; // 0: the model's patch embedding's
};

// A command of torchscope-cli: its options, defined next to its code (CLI11 checks their ranges
// and choices), and what it runs. main.cpp lists the commands; parseCommandLine knows none of them.
struct Command {
    std::string name;
    // Adds the command's subcommand to `app`, its options bound to `options`.
    std::function<CLI::App*(CLI::App& app, CliOptions& options)> define;
    std::function<int(const CliOptions& options)> run;
};

// CLI11 does the parsing: per-command options, ranges and choices checked, --help per command.
CliOptions parseCommandLine(int argc, char** argv, const std::vector<Command>& commands); // throws UsageError
std::string bundledDemoModel();

// The options commands share, for their define().
// One value per occurrence: "--input a --input b", never "--input a b" (which would swallow MODEL).
CLI::Option* repeatable(
    CLI::App* command, const std::string& name, std::vector<std::string>& values, const std::string& description);
// What every command that opens a model takes (MODEL, --device, --preprocess, --labels, --scores,
// --ops-library, --threads), and the command's help footer: `about`, then the spec syntax.
void addModelOptions(CLI::App* command, CliOptions& o, const std::string& about = "");
// --target and --target-box.
void addTarget(CLI::App* command, CliOptions& o);
// --job-timeout: under torchrun, how long a rank waits for the others.
void addDistributedTimeout(CLI::App* command, CliOptions& o);
// LRP's --composite and --attention-rule (attribute's methods, crp).
void addLrpOptions(CLI::App* command, CliOptions& o);
// What attribute, evaluate and sanity share: the inputs, methods and every method's settings.
void addAttributionOptions(CLI::App* command, CliOptions& o);
// A fraction strictly between 0 and 1; "LO:HI" with LO < HI (--range).
extern const CLI::Validator OpenFraction;
extern const CLI::Validator RangeText;

} // namespace torchscope::cli
