#pragma once

// What travels between the GUI thread and the run worker: plain values, no Torch, no Qt.

#include "common/float_tensor.h"
#include "graph/output_kinds.h"
#include "graph/request.h"
#include "imaging/image_run.h"
#include "model/model_setup.h"
#include "model/module_info.h"
#include "record/layer_statistics.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace torchscope {

struct ModelSummary {
    std::string path;
    std::string device;
    std::string signature;
    std::vector<ModuleInfo> modules;
    ModelSetup setup; // the model's torchscope.json, else ImageNet's preprocessing and no labels
    bool hasStoredSetup = false;
    std::string frozenNote; // see Model::frozenNote()
    std::string exportedNote; // a .pt2's describeExportedProgram(); empty for TorchScript
};

// What a failure belongs to, so that the view that started it can stop waiting.
enum class WorkerTask { OpenModel, Run, Export, Record, Probes, Setup, Attribution, Patch };

// The per-image run (core/imaging/image_run.h) of one request of the Document.
struct RunRequest : ImageRunConfig {
    int generation = 0;
};

using ImageResult = ImageRunItem;

struct RunJobResult : ImageRunResult {
    int generation = 0;
    int requestedImages = 0;
};

using RunJobResultPtr = std::shared_ptr<const RunJobResult>;

// A folder run of the recorders (core/record) set up in the Recorders panel.
struct RecordRequest {
    std::string folder;
    std::vector<GrabSpec> grabs;
    std::string reduction = "stats";
    std::string condition = "all";
    int batchSize = 16;
    ModelSetup setup; // its labels name class folders: folders named like them get their indices
    int64_t targetClass = -1;
    std::vector<EditSpec> edits; // the module tree's zero and scale edits, applied to every batch
};

struct RecordJobResult {
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
};

using RecordJobResultPtr = std::shared_ptr<const RecordJobResult>;

} // namespace torchscope
