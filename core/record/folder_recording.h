#pragma once

// A recording over an image folder as the Recorders tab runs it: the recorders (record/recorder.h)
// folded over every image (record/folder_run.h), the result kept whole for its export. No Torch in
// this header.

#include "export/manifest.h"
#include "graph/analysis_context.h"
#include "graph/request.h"
#include "model/model_setup.h"
#include "record/layer_statistics.h"

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace torchscope {

class Recorder;

struct RecordRequest {
    std::string folder;
    std::vector<GrabSpec> grabs;
    std::string reduction = "stats";
    std::string condition = "all";
    int batchSize = 16;
    ModelSetup setup; // its labels name class folders: folders named like them get their indices
    int64_t targetClass = -1;
    std::vector<EditSpec> edits; // applied to every batch
    // What an export of the recording says it is (its command, model, device, setup); the
    // recording adds its images and settings.
    ExportManifest manifest;
};

struct RecordResult {
    bool cancelled = false;
    int64_t images = 0;
    int64_t selected = 0;
    double seconds = 0.0;
    double imagesPerSecond = 0.0;
    std::string labelSource;
    std::vector<std::string> edits; // applied to every batch, as text
    std::vector<std::string> imagePaths; // dataset order: top-k samples index into it
    std::map<std::string, int64_t> samples;
    std::map<std::string, LayerStatistics> statistics;
    std::map<std::string, std::vector<std::vector<TopSample>>> topSamples; // key -> channel -> best first
    std::vector<std::pair<std::string, std::string>> failures;
    // For the export (writeRecordResult).
    std::shared_ptr<const Recorder> recorder;
    std::string summary; // the summary JSON
    ExportManifest manifest;
};

// The analysis "record" over the context's model.
struct RecordAnalysis {
    using Request = RecordRequest;
    using Result = RecordResult;
    static constexpr const char* name = "record";
    static Result run(AnalysisContext& context, const Request& request);
};

// Writes the recording as `torchscope-cli record --out` does (record/recording_files.h); returns
// the keys the format left out.
std::vector<std::string> writeRecordResult(const std::string& path, const RecordResult& result);

} // namespace torchscope
