#include "record/recording_files.h"

#include "common/strings.h"
#include "export/atomic_file.h"
#include "export/pt_export.h"
#include "export/tensor_formats.h"
#include "export/write_tensors.h"
#include "record/batch_run.h"
#include "record/recorder.h"

#include <nlohmann/json.hpp>

#include <filesystem>

namespace torchscope {
namespace {

// A file name for a key: "layer1.0.relu#1:grad" -> "layer1.0.relu_1_grad".
std::string fileNameFor(const std::string& key)
{
    std::string name = key;
    for (auto& c : name)
        if (c == ':' || c == '#' || c == '/')
            c = '_';
    return name;
}

} // namespace

std::string recordingSummary(const Recorder& recorder, const FolderRunSummary& run, const RecordingSource& source)
{
    nlohmann::json samples = nlohmann::json::object();
    for (const auto& key : recorder.keys())
        samples[key] = recorder.samples(key);
    nlohmann::json failures = nlohmann::json::array();
    for (const auto& [path, why] : run.failures)
        failures.push_back({{"path", path}, {"error", why}});
    const nlohmann::json summary{{"model", source.model}, {"reduction", toString(recorder.config().reduction)},
        {"condition", source.condition}, {"images", run.images}, {"selected", run.selected}, {"samples", samples},
        {"seconds", run.seconds}, {"images_per_second", run.imagesPerSecond}, {"cancelled", run.cancelled},
        {"classes", source.classes}, {"class_labels", source.classLabels}, {"labels_from", source.labelSource},
        {"edits", [&] {
             nlohmann::json edits = nlohmann::json::array();
             for (const auto& edit : recorder.config().edits)
                 edits.push_back(edit.toString());
             return edits;
         }()},
        {"image_files", source.imageFiles}, {"failures", failures}, {"warnings", run.warnings}};
    return summary.dump(2) + "\n";
}

RecordingFiles writeRecording(const std::string& out, const Recorder& recorder, const std::string& summaryJson)
{
    RecordingFiles files;
    const NamedValues results = recorder.results();
    const bool stats = recorder.config().reduction == Reduction::Stats;
    if (tensorFormatForPath(out)) {
        files.leftOut = writeTensors(out, results);
        files.written.push_back(out);
        std::filesystem::path beside(out);
        if (stats) {
            writeFileAtomically(beside.replace_extension(".csv").string(), recorder.channelCsv());
            files.written.push_back(beside.string());
        }
        writeFileAtomically(beside.replace_extension(".json").string(), summaryJson);
        files.written.push_back(beside.string());
        return files;
    }
    std::filesystem::create_directories(out);
    const std::filesystem::path folder(out);
    for (const auto& key : recorder.keys()) {
        NamedValues mine;
        for (const auto& [name, value] : results)
            if (name == key || startsWith(name, key + ":"))
                mine.emplace_back(name, value);
        const std::string path = (folder / (fileNameFor(key) + ".pt")).string();
        writePtDictionary(path, mine);
        files.written.push_back(path);
    }
    if (stats) {
        writeFileAtomically((folder / "statistics.csv").string(), recorder.channelCsv());
        files.written.push_back((folder / "statistics.csv").string());
    }
    writeFileAtomically((folder / "summary.json").string(), summaryJson);
    files.written.push_back((folder / "summary.json").string());
    return files;
}

} // namespace torchscope
