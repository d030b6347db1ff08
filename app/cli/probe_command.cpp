#include "probe_command.h"

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/strings.h"
#include "distributed/distributed_probe_data.h"
#include "distributed_run.h"
#include "graph/engine.h"
#include "graph/selector.h"
#include "image_inputs.h"
#include "model/model.h"
#include "open_model.h"
#include "probe/activation_cache.h"
#include "probe/layer_sweep.h"
#include "probe/linear_probe.h"
#include "probe/probe_dataset.h"
#include "problems.h"
#include "record/labelled_samples.h"
#include "stop_requests.h"

#include <ATen/ATen.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <thread>

namespace torchscope::cli {
namespace {

std::string cacheDirectory(const CliOptions& options)
{
    if (options.cache == "none")
        return {};
    if (!options.cache.empty())
        return options.cache;
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
        return std::string(xdg) + "/torchscope/activations";
    if (const char* home = std::getenv("HOME"); home && *home)
        return std::string(home) + "/.cache/torchscope/activations";
    return {};
}

// --data: a folder with one subfolder per class, or a torch.save'd {"samples", "labels"[, "classes"]}.
// `shard`: a torchrun rank's share.
ProbeSamples loadSamples(const Model& model, const CliOptions& options, const Shard& shard = {})
{
    if (std::filesystem::is_directory(options.data)) {
        const int threads = options.decodeThreads > 0
            ? options.decodeThreads
            : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
        return folderProbeSamples(options.data, chooseSetup(model, options), options.batch, threads, shard);
    }
    const LabelledSamples saved = readLabelledSamples(options.data);
    if (saved.labels.empty())
        throw Error("--data '" + options.data + "' is a torch.save file but not a {\"samples\": [N, ...], "
            + "\"labels\": [N]} dict; give that, or a folder with one subfolder per class");
    return tensorSamples(saved.samples, at::tensor(saved.labels, at::kLong), options.batch,
        fileContentHash(options.data), saved.classes, shard);
}

std::vector<std::string> layersOf(const Model& model, const CliOptions& options)
{
    std::vector<std::string> layers;
    for (const auto& spec : options.layers)
        for (const auto& path : resolveSelector(model, spec))
            if (std::find(layers.begin(), layers.end(), path) == layers.end())
                layers.push_back(path);
    return layers;
}

std::string percent(double accuracy)
{
    std::ostringstream out;
    out << std::fixed << std::setprecision(1) << 100.0 * accuracy << "%";
    return out.str();
}

// What the probe needs before its first batch (in a distributed run (torchrun): this rank's share).
struct PreparedProbe {
    std::shared_ptr<Model> model;
    std::vector<std::string> layers;
    std::unique_ptr<Engine> engine;
    ProbeSamples samples;
};

PreparedProbe prepareProbe(const CliOptions& options, const Shard& shard)
{
    PreparedProbe p;
    p.model = openModel(options);
    p.layers = layersOf(*p.model, options);
    p.engine = std::make_unique<Engine>(p.model);
    p.samples = loadSamples(*p.model, options, shard);
    return p;
}

} // namespace

static int runProbe(const CliOptions& given)
{
    const std::unique_ptr<DistributedRun> run = DistributedRun::join(given);
    const CliOptions options = run ? run->rankOptions(given) : given;
    PreparedProbe p;
    if (run)
        run->prepareTogether(
            [&] {
                p = prepareProbe(options, run->shard());
                return static_cast<int64_t>(p.samples.labels.size());
            },
            "--data");
    else
        p = prepareProbe(options, {});
    const std::vector<std::string>& layers = p.layers;
    const ProbePooling pooling = parseProbePooling(options.pool);
    const bool speaks = !run || run->root();

    const auto progress = [speaks](const Progress& p) {
        if (speaks)
            std::cerr << "\ractivations: " << p.done << " / " << p.total << " samples" << std::flush;
        return !StopRequests::asked();
    };
    ActivationCache cache(run ? std::string() : cacheDirectory(options));
    ProbeDataset dataset;
    {
        const StopRequests stops(run != nullptr);
        dataset = run ? collectProbeDatasetTogether(run->lockstep(), *p.engine, layers, pooling, p.samples, progress)
                      : collectProbeDataset(*p.engine, layers, pooling, p.samples, &cache, progress);
        if (speaks)
            std::cerr << '\n';
    }
    if (dataset.cancelled)
        throw Error("interrupted while grabbing activations; nothing was trained");
    if (!speaks)
        return 0; // rank 0 trains on every rank's activations
    printSkipped(dataset.failures);
    if (!dataset.cachedLayers.empty())
        std::cerr << "activations of " << join(dataset.cachedLayers, ", ") << " from the cache (" << cache.directory()
                  << ")\n";

    ProbeTrainingConfig config;
    config.seed = options.seed;
    config.validationFraction = options.validation;
    const LayerSweepResult sweep = sweepLayers(dataset, layers, config);
    const int64_t n = dataset.labels.size(0);

    if (options.subcommand == "train") {
        const LayerProbeResult& result = sweep.layers.front();
        const LinearProbe probe{result.layer, pooling, dataset.classNames, result.probe};
        saveProbeModule(options.out, probe);
        if (!options.stateDict.empty())
            saveProbeStateDict(options.stateDict, probe);
        const auto& t = result.probe;
        if (options.json) {
            const nlohmann::json report{{"layer", result.layer}, {"pooling", options.pool},
                {"features", result.features}, {"classes", dataset.classNames}, {"samples", n},
                {"train_accuracy", t.trainAccuracy}, {"validation_accuracy", t.validationAccuracy},
                {"best_epoch", t.bestEpoch}, {"epochs", t.trainLoss.size()}, {"train_loss", t.trainLoss},
                {"validation_loss", t.validationLoss}, {"confusion", t.confusion}, {"out", options.out}};
            std::cout << report.dump(2) << '\n';
            return 0;
        }
        std::cout << "probe on " << result.layer << " (" << options.pool << ", " << result.features
                  << " features): " << dataset.classNames.size() << " classes (" << join(dataset.classNames, ", ")
                  << "), " << n << " samples\n";
        std::cout << "train accuracy " << percent(t.trainAccuracy) << ", validation accuracy "
                  << percent(t.validationAccuracy) << " (best epoch " << t.bestEpoch + 1 << " of " << t.trainLoss.size()
                  << ")\n";
        std::cout << "validation confusion (rows: true class, columns: predicted):\n";
        for (size_t i = 0; i < t.confusion.size(); ++i) {
            std::cout << "  " << std::left << std::setw(16) << dataset.classNames[i] << std::right;
            for (int64_t count : t.confusion[i])
                std::cout << std::setw(6) << count;
            std::cout << '\n';
        }
        std::cout << "wrote " << options.out << " (TorchScript: torch.jit.load it and call it on " << result.layer
                  << "'s output)" << (options.stateDict.empty() ? "" : " and " + options.stateDict) << '\n';
        return 0;
    }

    for (const auto& l : sweep.layers)
        std::cout << l.layer << '\t' << std::fixed << std::setprecision(4) << l.probe.validationAccuracy << '\n';
    std::cerr << "best layer: " << sweep.layers[static_cast<size_t>(sweep.best)].layer << " ("
              << percent(sweep.layers[static_cast<size_t>(sweep.best)].probe.validationAccuracy)
              << " validation accuracy, " << n << " samples)\n";
    if (!options.csv.empty())
        writeFileAtomically(options.csv, sweepCsv(sweep));
    return 0;
}

// torchscope-cli probe train / probe sweep.
Command probeCommand()
{
    return {"probe",
        [](CLI::App& app, CliOptions& o) {
            CLI::App* probe
                = app.add_subcommand("probe", "train linear probes on layer outputs (probe train, probe sweep)");
            probe->require_subcommand(1);
            CLI::App* train = probe->add_subcommand("train", "train a linear probe on one layer's output");
            CLI::App* sweep = probe->add_subcommand("sweep", "the same probe on every layer the --layer specs select");
            for (CLI::App* command : {train, sweep}) {
                addModelOptions(command, o,
                    command == train ? "Prints train and validation accuracy. PROBE.pt is TorchScript: "
                                       "torch.jit.load(PROBE.pt)(activations).\n"
                                     : "Prints one line per layer: path, validation accuracy.\n");
                auto* layer
                    = repeatable(command, "--layer", o.layers, "layer path (sweep: specs, globs allowed; repeatable)")
                          ->required();
                if (command == train)
                    layer->expected(1);
                command
                    ->add_option("--data", o.data, "DIR (one subfolder per class) or FILE.pt {\"samples\", \"labels\"}")
                    ->required();
                command->add_option("--pool", o.pool, "how maps become features")
                    ->check(CLI::IsMember({"avg", "flatten"}))
                    ->capture_default_str();
                command->add_option("--seed", o.seed, "the random seed of the split and the training")
                    ->capture_default_str();
                command->add_option("--validation", o.validation, "the share of samples held out")
                    ->check(OpenFraction)
                    ->capture_default_str();
                command->add_option("--cache", o.cache,
                    "DIR for cached activations, or none; default: $XDG_CACHE_HOME/torchscope/activations");
                command->add_option("--batch", o.batch, "samples per forward pass")
                    ->check(CLI::Range(1, 65536))
                    ->capture_default_str();
                command->add_flag("--json", o.json, "print JSON");
                addDistributedTimeout(command, o);
            }
            train->add_option("--out,-o", o.out, "PROBE.pt")->required();
            train->add_option("--state-dict", o.stateDict, "FILE.pt: the probe's tensors as well");
            sweep->add_option("--csv", o.csv, "FILE.csv: the sweep's table");
            return probe;
        },
        runProbe};
}

} // namespace torchscope::cli
