#include "record_command.h"

#include "common/error.h"
#include "graph/engine.h"
#include "image_inputs.h"
#include "inputs.h"
#include "model/model.h"
#include "open_model.h"
#include "record/batch_run.h"
#include "record/labelled_samples.h"
#include "record/recorder.h"
#include "record/recording_files.h"

#include <atomic>
#include <csignal>
#include <iostream>
#include <thread>

namespace torchscope::cli {
namespace {

std::atomic_bool interrupted{false};

} // namespace

int runRecord(const CliOptions& options)
{
    const bool tensorStream = options.inputs.size() == 1 && isTensorFile(options.inputs[0]);
    for (const auto& input : options.inputs)
        if (isTensorFile(input) && !tensorStream)
            throw Error("record takes one tensor file on its own, or image folders and images: '" + input
                + "' is a tensor file among other inputs");
    auto model = openModel(options);
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

    const ModelSetup setup = chooseSetup(*model, options);
    config.scores = setup.scores;
    Engine engine(model);
    Recorder recorder(config);
    std::signal(SIGINT, [](int) { interrupted = true; });
    const auto progress = [](const FolderRunProgress& p) {
        std::cerr << "\r" << p.imagesDone << " / " << p.imagesTotal << " samples" << std::flush;
        return !interrupted;
    };

    FolderRunSummary summary;
    RecordingSource source;
    source.model = model->path();
    source.condition = options.condition;
    if (tensorStream) {
        // A tensor saved with torch.save: [N, ...] rows, or {"samples": [N, ...], "labels": [N]}.
        const LabelledSamples saved = readLabelledSamples(options.inputs[0]);
        summary = recordTensor(engine, recorder, saved.samples, saved.labels, options.batch, progress);
        source.classes = saved.classes;
        if (!saved.classes.empty()) {
            for (size_t i = 0; i < saved.classes.size(); ++i)
                source.classLabels.push_back(static_cast<int64_t>(i));
            source.labelSource = "the tensor file's classes";
        }
    }
    else {
        const int threads = options.decodeThreads > 0
            ? options.decodeThreads
            : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
        summary = recordImageInputs(engine, recorder, options.inputs, setup, options.batch, threads, progress, source);
    }
    std::cerr << '\n';
    std::signal(SIGINT, SIG_DFL);

    const std::string report = recordingSummary(recorder, summary, source);
    writeRecording(options.out, recorder, report);
    for (const auto& [path, why] : summary.failures)
        std::cerr << "torchscope-cli: warning: skipped " << path << ": " << why << '\n';
    std::cout << report;
    return 0;
}

} // namespace torchscope::cli
