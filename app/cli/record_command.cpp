#include "record_command.h"

#include "common/error.h"
#include "common/strings.h"
#include "export/atomic_file.h"
#include "export/pt_export.h"
#include "export/tensor_formats.h"
#include "export/write_tensors.h"
#include "graph/engine.h"
#include "inputs.h"
#include "model/model.h"
#include "open_model.h"
#include "record/batch_run.h"
#include "record/labelled_samples.h"
#include "record/recorder.h"

#ifdef TORCHSCOPE_HAVE_IMAGING
#include "record/folder_run.h"
#endif

#include <nlohmann/json.hpp>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <thread>

namespace torchscope::cli {
namespace {

std::atomic_bool interrupted{false};

// A file name for a key: "layer1.0.relu#1:grad" -> "layer1.0.relu_1_grad".
std::string fileNameFor(const std::string& key)
{
    std::string name = key;
    for (auto& c : name)
        if (c == ':' || c == '#' || c == '/')
            c = '_';
    return name;
}

void writeOutputs(const std::string& out, const Recorder& recorder, const nlohmann::json& summary)
{
    const NamedValues results = recorder.results();
    const std::string csv = recorder.channelCsv();
    if (tensorFormatForPath(out)) {
        writeTensors(out, results);
        if (recorder.config().reduction == Reduction::Stats)
            writeFileAtomically(std::filesystem::path(out).replace_extension(".csv").string(), csv);
        return;
    }
    // A folder: one .pt per recorded key (as torchfunc saves one file per layer).
    std::filesystem::create_directories(out);
    for (const auto& key : recorder.keys()) {
        NamedValues mine;
        for (const auto& [name, value] : results)
            if (name == key || startsWith(name, key + ":"))
                mine.emplace_back(name, value);
        writePtDictionary((std::filesystem::path(out) / (fileNameFor(key) + ".pt")).string(), mine);
    }
    if (recorder.config().reduction == Reduction::Stats)
        writeFileAtomically((std::filesystem::path(out) / "statistics.csv").string(), csv);
    writeFileAtomically((std::filesystem::path(out) / "summary.json").string(), summary.dump(2) + "\n");
}

} // namespace

int runRecord(const CliOptions& options)
{
    const bool tensorStream = options.inputs.size() == 1 && isTensorFile(options.inputs[0]);
#ifndef TORCHSCOPE_HAVE_IMAGING
    if (!tensorStream)
        throw Error("record reads image folders only when built with OpenCV, and this TorchScope was built "
                    "without it (TORCHSCOPE_IMAGING=OFF); give one tensor file: --input FILE.pt with [N, ...] "
                    "rows or {\"samples\": [N, ...], \"labels\": [N]}");
#endif
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
    nlohmann::json classes = nlohmann::json::array();
    nlohmann::json classLabels = nlohmann::json::array();
    std::string labelSource;
    if (tensorStream) {
        // A tensor saved with torch.save: [N, ...] rows, or {"samples": [N, ...], "labels": [N]}.
        const LabelledSamples saved = readLabelledSamples(options.inputs[0]);
        summary = recordTensor(engine, recorder, saved.samples, saved.labels, options.batch, progress);
        classes = saved.classes;
        if (!saved.classes.empty()) {
            for (size_t i = 0; i < saved.classes.size(); ++i)
                classLabels.push_back(i);
            labelSource = "the tensor file's classes";
        }
    }
#ifdef TORCHSCOPE_HAVE_IMAGING
    else {
        ImageFolder folder;
        for (const auto& input : options.inputs) {
            const ImageFolder part = std::filesystem::is_directory(input) ? ImageFolder::scan(input, setup.labels)
                                                                          : ImageFolder::fromFiles({input});
            if (folder.classes.empty()) {
                folder.classes = part.classes;
                folder.classLabels = part.classLabels;
                folder.labelSource = part.labelSource;
            }
            folder.images.insert(folder.images.end(), part.images.begin(), part.images.end());
        }
        if (folder.images.empty())
            throw Error("nothing to record: the inputs hold no images");
        FolderRunOptions run;
        run.batchSize = options.batch;
        run.decodeThreads = options.decodeThreads > 0
            ? options.decodeThreads
            : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
        summary = recordFolder(engine, recorder, folder, setup.preprocessing, run, progress);
        classes = folder.classes;
        classLabels = folder.classLabels;
        labelSource = folder.labelSource;
    }
#endif
    std::cerr << '\n';
    std::signal(SIGINT, SIG_DFL);

    nlohmann::json samples;
    for (const auto& key : recorder.keys())
        samples[key] = recorder.samples(key);
    nlohmann::json failures = nlohmann::json::array();
    for (const auto& [path, why] : summary.failures)
        failures.push_back({{"path", path}, {"error", why}});
    const nlohmann::json report{{"model", model->path()}, {"reduction", options.reduce},
        {"condition", options.condition}, {"images", summary.images}, {"selected", summary.selected},
        {"samples", samples}, {"seconds", summary.seconds}, {"images_per_second", summary.imagesPerSecond},
        {"cancelled", summary.cancelled}, {"classes", classes}, {"class_labels", classLabels},
        {"labels_from", labelSource}, {"failures", failures}, {"warnings", summary.warnings}};
    writeOutputs(options.out, recorder, report);
    for (const auto& [path, why] : summary.failures)
        std::cerr << "torchscope-cli: warning: skipped " << path << ": " << why << '\n';
    std::cout << report.dump(2) << '\n';
    return 0;
}

} // namespace torchscope::cli
