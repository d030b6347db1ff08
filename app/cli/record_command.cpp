#include "record_command.h"

#include "cli_manifest.h"
#include "common/error.h"
#include "distributed/distributed_recording.h"
#include "distributed_run.h"
#include "graph/engine.h"
#include "image_inputs.h"
#include "inputs.h"
#include "model/model.h"
#include "open_model.h"
#include "problems.h"
#include "record/batch_run.h"
#include "record/labelled_samples.h"
#include "record/recorder.h"
#include "record/recording_files.h"
#include "stop_requests.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <thread>

namespace torchscope::cli {
namespace {

RecorderConfig recorderConfig(const CliOptions& options)
{
    RecorderConfig config;
    for (const auto& grab : options.grabs)
        config.grabs.push_back(GrabSpec::parse(grab));
    config.reduction = parseReduction(options.reduce);
    config.condition = Condition::parse(options.condition);
    config.memoryCapBytes = options.memoryCapMiB << 20;
    config.histogramBins = options.bins;
    config.topK = options.topK;
    config.targetClass = options.target;
    config.histogramRange = options.range;
    for (const auto& edit : options.edits)
        config.edits.push_back(EditSpec::parse(edit));
    return config;
}

// Everything a recording needs before its first batch: the model, the recorder, the batches of
// this process (a rank's share in a distributed run (torchrun)) and what the summary says of them.
struct Prepared {
    std::shared_ptr<Model> model;
    std::unique_ptr<Engine> engine;
    std::unique_ptr<Recorder> recorder;
    BatchStream stream;
    RecordingSource source;
    ModelSetup setup;
};

Prepared prepare(const CliOptions& options, const Shard& shard)
{
    const bool tensorStream = options.inputs.size() == 1 && isTensorFile(options.inputs[0]);
    for (const auto& input : options.inputs)
        if (isTensorFile(input) && !tensorStream)
            throw Error("record takes one tensor file on its own, or image folders and images: '" + input
                + "' is a tensor file among other inputs");
    Prepared p;
    p.model = openModel(options);
    RecorderConfig config = recorderConfig(options);
    p.setup = chooseSetup(*p.model, options);
    const ModelSetup& setup = p.setup;
    config.scores = setup.scores;
    p.engine = std::make_unique<Engine>(p.model);
    p.recorder = std::make_unique<Recorder>(config);
    p.source.model = p.model->path();
    p.source.condition = options.condition;
    if (tensorStream) {
        // A tensor saved with torch.save: [N, ...] rows, or {"samples": [N, ...], "labels": [N]}.
        const LabelledSamples saved = readLabelledSamples(options.inputs[0]);
        p.stream = tensorBatches(saved.samples, saved.labels, options.batch, shard);
        p.source.classes = saved.classes;
        if (!saved.classes.empty()) {
            for (size_t i = 0; i < saved.classes.size(); ++i)
                p.source.classLabels.push_back(static_cast<int64_t>(i));
            p.source.labelSource = "the tensor file's classes";
        }
    } else {
        const int threads = options.decodeThreads > 0
            ? options.decodeThreads
            : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
        p.stream = imageRecordingBatches(options.inputs, setup, options.batch, threads, shard, p.source);
    }
    return p;
}

} // namespace

static int runRecord(const CliOptions& given)
{
    const std::unique_ptr<DistributedRun> run = DistributedRun::join(given);
    const CliOptions options = run ? run->rankOptions(given) : given;
    Prepared p;
    if (run)
        run->prepareTogether(
            [&] {
                p = prepare(options, run->shard());
                return p.stream.total;
            },
            "inputs");
    else
        p = prepare(options, {});

    const bool speaks = !run || run->root(); // progress and results come from rank 0
    const auto progress = [speaks](const Progress& state) {
        if (speaks)
            std::cerr << "\r" << state.done << " / " << state.total << " samples" << std::flush;
        return !StopRequests::asked();
    };
    FolderRunResult summary;
    {
        const StopRequests stops(run != nullptr);
        if (run) {
            summary = recordShareTogether(run->lockstep(), *p.engine, *p.recorder, p.stream, progress);
            const auto merged = mergeRecordingsToRoot(run->lockstep(), *p.recorder, summary);
            if (!merged)
                return 0; // rank 0 writes the one result
            std::cerr << "\nmerged the recordings of " << run->size() << " ranks: " << merged->bytes
                      << " bytes from the others, " << merged->seconds << " s";
        } else {
            summary = recordBatches(*p.engine, *p.recorder, p.stream, progress);
        }
        std::cerr << '\n';
    }

    const std::string report = recordingSummary(*p.recorder, summary, p.source);
    ExportManifest manifest = cliManifest(options, *p.model, p.setup, p.source.imageFiles);
    manifest.settings.emplace_back("reduce", options.reduce);
    manifest.settings.emplace_back("condition", options.condition);
    writeRecording(options.out, *p.recorder, report, &manifest);
    printSkipped(summary.failures);
    if (run)
        for (const auto& warning : summary.warnings)
            std::cerr << "torchscope-cli: " << warning << '\n';
    std::cout << report;
    return 0;
}

// torchscope-cli record.
Command recordCommand()
{
    return {"record",
        [](CLI::App& app, CliOptions& o) {
            CLI::App* record
                = app.add_subcommand("record", "stream many images through the model and fold what the grabs take");
            addModelOptions(record, o,
                "Streams image folders (one subfolder per class gives true labels) or a tensor file through the "
                "model.\n"
                "Writes FILE.pt/.npz/.safetensors, or DIR with one .pt per layer, a CSV of per-channel statistics\n"
                "and a summary. Ctrl+C stops and keeps what was recorded.\n");
            repeatable(record, "--input", o.inputs,
                "image folders and images, or one tensor .pt ([N, ...] or {\"samples\", \"labels\", \"classes\"})")
                ->required();
            repeatable(record, "--grab", o.grabs, "what to record (repeatable; see below)")->required();
            record->add_option("--out,-o", o.out, "DIR or FILE.pt/.npz/.safetensors")->required();
            repeatable(record, "--edit", o.edits,
                "zero or scale channels, or splice an SAE in with latents edited, in every forward (an ablated "
                "model's statistics)");
            addTarget(record, o);
            record->add_option("--reduce", o.reduce, "how samples are folded")
                ->check(CLI::IsMember({"none", "sum", "mean", "max", "min", "stats"}))
                ->capture_default_str();
            record
                ->add_option(
                    "--condition", o.condition, "which samples count: all, true:L,.., predicted:L,.., correct, wrong")
                ->capture_default_str();
            record->add_option("--batch", o.batch, "samples per forward pass")
                ->check(CLI::Range(1, 65536))
                ->capture_default_str();
            record->add_option("--memory-cap", o.memoryCapMiB, "MiB kept by --reduce none")
                ->check(CLI::Range(int64_t{1}, int64_t{1} << 30))
                ->capture_default_str();
            record->add_option("--bins", o.bins, "histogram bins")
                ->check(CLI::Range(1, 1 << 20))
                ->capture_default_str();
            record->add_option("--range", o.rangeText, "LO:HI: the histogram's range (default: from the first batch)")
                ->check(RangeText);
            record->add_option("--topk", o.topK, "samples kept per channel as the most activating")
                ->check(CLI::Range(0, 100000))
                ->capture_default_str();
            record->add_option("--decode-threads", o.decodeThreads, "image decoding threads; 0: automatic")
                ->check(CLI::Range(0, 1024))
                ->capture_default_str();
            addDistributedTimeout(record, o);
            return record;
        },
        runRecord};
}

} // namespace torchscope::cli
