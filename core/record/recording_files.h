#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace torchscope {

struct ExportManifest;

class Recorder;
struct FolderRunResult;

// Where a recording's samples came from, for its summary.
struct RecordingSource {
    std::string model;
    std::string condition; // as the user wrote it
    std::vector<std::string> imageFiles; // in sample order (top_samples index into it); none for a tensor stream
    std::vector<std::string> classes; // class folder names
    std::vector<int64_t> classLabels; // the label of each class folder
    std::string labelSource;
};

// The summary JSON of a recording: what ran, how long, which images in which order (so
// `top_samples` and `none` rows map to files), what failed.
std::string recordingSummary(const Recorder& recorder, const FolderRunResult& run, const RecordingSource& source);

// Writes a recording. FILE.pt/.npz/.safetensors: one file of every key, with FILE.csv (per-channel
// statistics) and FILE.json (the summary) beside it. A folder: one .pt per recorded key (as
// torchfunc saves one file per layer), statistics.csv and summary.json. Every file is written
// atomically. Returns the keys left out because they are not tensors (as writeTensors). Throws
// torchscope::Error. With a manifest, FILE.manifest.json (a folder: manifest.json) describes every
// key, its capture and its statistic.
std::vector<std::string> writeRecording(const std::string& out, const Recorder& recorder,
    const std::string& summaryJson, const ExportManifest* manifest = nullptr);

} // namespace torchscope
