#pragma once

// What travels between the GUI thread and the run worker: plain values, no Torch, no Qt.

#include "common/float_tensor.h"
#include "graph/output_kinds.h"
#include "graph/request.h"
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
};

struct RunRequest {
    int generation = 0;
    std::vector<std::string> images;
    Request request;
    ModelSetup setup;
    int topK = 5;
};

struct ImageResult {
    std::string path;
    FloatTensor picture; // the decoded image, [H, W, 3] in [0, 1], for overlays
    int thumbnailWidth = 0; // RGB8, made on the worker thread
    int thumbnailHeight = 0;
    std::vector<uint8_t> thumbnail;
    FloatTensor modelInput; // what the model saw, [C, H, W]
    FloatTensor inputPicture; // the same as a picture, [H, W, 3] in [0, 1] (boxes and class maps)
    FloatTensor output; // the model's (or the truncation point's) output for this image
    ImagePrediction prediction; // top classes, a class map or detections
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
    std::string gradientTarget; // what :grad grabs are of, for the first image ("class 3", ...)
    std::map<std::string, LayerStatistics> statistics; // per grabbed key, over the images
    std::vector<ModuleInfo> modules; // with output shapes from a dry run, when one was made
    std::vector<std::string> cutAway; // modules the truncation point cuts away (none without one)
};

using RunSnapshotPtr = std::shared_ptr<const RunSnapshot>;

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

struct RecordSnapshot {
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

using RecordSnapshotPtr = std::shared_ptr<const RecordSnapshot>;

} // namespace torchscope
