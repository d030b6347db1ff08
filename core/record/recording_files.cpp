#include "record/recording_files.h"

#include "common/atomic_file.h"
#include "common/strings.h"
#include "export/manifest.h"
#include "export/pt_export.h"
#include "export/tensor_formats.h"
#include "export/write_tensors.h"
#include "record/batch_run.h"
#include "record/recorder.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>

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

std::string recordingSummary(const Recorder& recorder, const FolderRunResult& run, const RecordingSource& source)
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
        {"edits",
            [&] {
                nlohmann::json edits = nlohmann::json::array();
                for (const auto& edit : recorder.config().edits)
                    edits.push_back(edit.toString());
                return edits;
            }()},
        {"image_files", source.imageFiles}, {"failures", failures}, {"warnings", run.warnings}};
    return summary.dump(2) + "\n";
}

std::vector<std::string> writeRecording(
    const std::string& out, const Recorder& recorder, const std::string& summaryJson, const ExportManifest* manifest)
{
    const NamedValues results = recorder.results();
    const bool stats = recorder.config().reduction == Reduction::Stats;
    std::optional<ExportManifest> described;
    if (manifest) { // each result key under the capture it reduces: "layer1:mean" is layer1's mean
        described = *manifest;
        described->keys.clear();
        for (const auto& [name, value] : results)
            for (const auto& key : recorder.keys())
                if (name == key || startsWith(name, key + ":")) {
                    ManifestKey entry = ManifestKey::capture(key);
                    entry.key = name;
                    // The key itself holds the reduction's value ("mean"); KEY:samples and the
                    // like what the name after it says.
                    entry.statistic = name == key ? toString(recorder.config().reduction) : name.substr(key.size() + 1);
                    described->keys.push_back(entry);
                    break;
                }
    }
    if (tensorFormatForPath(out)) {
        const std::vector<std::string> leftOut = writeTensors(out, results, described ? &*described : nullptr);
        std::filesystem::path beside(out);
        if (stats)
            writeFileAtomically(beside.replace_extension(".csv").string(), recorder.channelCsv());
        writeFileAtomically(beside.replace_extension(".json").string(), summaryJson);
        return leftOut;
    }
    std::filesystem::create_directories(out);
    const std::filesystem::path folder(out);
    for (const auto& key : recorder.keys()) {
        NamedValues mine;
        for (const auto& [name, value] : results)
            if (name == key || startsWith(name, key + ":"))
                mine.emplace_back(name, value);
        writePtDictionary((folder / (fileNameFor(key) + ".pt")).string(), mine);
    }
    if (stats)
        writeFileAtomically((folder / "statistics.csv").string(), recorder.channelCsv());
    writeFileAtomically((folder / "summary.json").string(), summaryJson);
    if (described)
        writeManifest(out, *described);
    return {};
}

} // namespace torchscope
