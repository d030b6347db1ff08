#pragma once

// What travels between the GUI thread and the lanes: plain values, no Torch, no Qt.

#include "common/float_tensor.h"
#include "graph/output_kinds.h"
#include "graph/request.h"
#include "model/model_setup.h"
#include "model/module_info.h"
#include "record/folder_recording.h"
#include "record/layer_statistics.h"
#include "run/image_run.h"

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

// The per-image run (core/run/image_run.h) of one request of the Document.
struct RunRequest : ImageRunConfig {
    int generation = 0;
};

using ImageResult = ImageRunItem;

struct RunJobResult : ImageRunResult {
    int generation = 0;
    int requestedImages = 0;
};

using RunJobResultPtr = std::shared_ptr<const RunJobResult>;

// A folder run of the recorders (core/record/folder_recording.h), set up in the Recorders panel.
using RecordResultPtr = std::shared_ptr<const RecordResult>;

} // namespace torchscope
