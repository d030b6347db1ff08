#pragma once

// What travels between the GUI thread and the run worker: plain values, no Torch, no Qt.

#include "common/float_tensor.h"
#include "graph/request.h"
#include "imaging/preprocessing.h"
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
    std::vector<std::string> labels;
    Preprocessing preprocessing; // from the model's torchscope.json, else imagenet
    bool hasModelCard = false;
};

struct RunRequest {
    int generation = 0;
    std::vector<std::string> images;
    Request request;
    Preprocessing preprocessing;
    int topK = 5;
};

struct Prediction {
    int64_t index = 0;
    std::string label;
    double probability = 0.0;
};

struct ImageResult {
    std::string path;
    FloatTensor picture; // the decoded image, [H, W, 3] in [0, 1], for overlays
    int thumbnailWidth = 0; // RGB8, made on the worker thread
    int thumbnailHeight = 0;
    std::vector<uint8_t> thumbnail;
    FloatTensor modelInput; // what the model saw, [C, H, W]
    FloatTensor output; // the model's (or the truncation point's) output for this image
    std::vector<Prediction> predictions;
    std::map<std::string, FloatTensor> values; // grabbed values, batch dimension removed
};

struct RunSnapshot {
    int generation = 0;
    bool cancelled = false;
    int requestedImages = 0;
    double seconds = 0.0;
    std::vector<ImageResult> images;
    std::vector<std::pair<std::string, std::string>> failures; // image path, why
    std::vector<std::string> warnings;
    std::map<std::string, LayerStatistics> statistics; // per grabbed key, over the images
    std::vector<ModuleInfo> modules; // with output shapes from a dry run, when one was made
};

using RunSnapshotPtr = std::shared_ptr<const RunSnapshot>;

} // namespace torchscope
