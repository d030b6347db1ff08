#pragma once

// The per-image run: each image decoded, preprocessed and run through the model on its own, so
// that images of any size mix and one unreadable file costs only itself. The window runs it on
// every change of its request; `torchscope-cli run --each-image` runs it once. No Torch here.

#include "common/float_tensor.h"
#include "common/progress.h"
#include "graph/output_kinds.h"
#include "graph/request.h"
#include "model/model_setup.h"
#include "model/module_info.h"
#include "record/layer_statistics.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace torchscope {

class Engine;
class Model;
struct ExportManifest;

struct ImageRunConfig {
    std::vector<std::string> images;
    Request request;
    ModelSetup setup; // preprocessing; scores and labels read the predictions
    int topK = 5;
    int thumbnailSize = 72; // longest side in pixels; 0: no thumbnails
    bool keepPictures = true; // the decoded image and the model input, for overlays
    // This image (an index into images) runs first: the window's selected image, so that its
    // result comes soonest. Results, recorded tensors and exports stay in the images' order.
    int firstImage = -1;
};

struct ImageRunItem {
    std::string path;
    FloatTensor picture; // the decoded image, [H, W, 3] in [0, 1]
    int thumbnailWidth = 0; // RGB8
    int thumbnailHeight = 0;
    std::vector<uint8_t> thumbnail;
    FloatTensor modelInput; // what the model saw, [C, H, W]
    FloatTensor inputPicture; // the same as a picture, [H, W, 3] in [0, 1] (boxes and class maps)
    FloatTensor output; // the model's (or the truncation point's) output for this image
    ImagePrediction prediction; // top classes, a class map or detections; none when truncated
    std::map<std::string, FloatTensor> values; // grabbed values by CaptureKey, batch dimension removed
    std::string gradientTarget; // what this image's :grad grabs are of ("class 3", ...); "" without
    // The image's width and height as decoded.
    int width = 0;
    int height = 0;
};

// Called with each image's result as soon as it has run (on the running thread).
using ImageResultCallback = std::function<void(const ImageRunItem&)>;

struct ImageRunResult {
    bool cancelled = false;
    double seconds = 0.0;
    std::vector<ImageRunItem> images;
    std::vector<std::pair<std::string, std::string>> failures; // image path, why
    std::vector<std::string> warnings;
    std::string gradientTarget; // what :grad grabs are of, for the first image (each image's: its item)
    std::map<std::string, LayerStatistics> statistics; // per key, over the images
    std::vector<ModuleInfo> modules; // with output shapes, when this run made the dry run
    std::vector<std::string> cutAway; // modules the truncation point cuts away
    // The model failed on every image it got: the request's problem, not the images'. With
    // setupAdvice when the failure points at the input setup (size, channels).
    std::string error;
    std::string setupAdvice;
};

// Runs on one engine, keeping what later runs reuse: the dry run's output shapes, the modules a
// truncation point cuts away, and the last run's tensors for export. Not thread-safe.
class ImageRunner {
public:
    ImageRunner(std::shared_ptr<Model> model, Engine& engine);
    ~ImageRunner();

    // Throws torchscope::Error for a request the model cannot take (unknown path, a model of
    // several inputs) before reading any image; image and model failures end up in the result.
    ImageRunResult run(
        const ImageRunConfig& config, const ProgressCallback& progress = {}, const ImageResultCallback& onImage = {});

    bool hasRecorded() const;
    // The last run's values, each key's images concatenated along dim 0, in any format
    // writeTensors takes. A key whose shape differs between images, or whose value is not a tensor
    // (a dict of segmentation outputs), is a list, one per image, which .pt keeps and the other
    // formats leave out: returned, with why.
    std::vector<std::string> writeRecorded(const std::string& path, const ExportManifest* manifest = nullptr) const;

private:
    struct Cache;
    std::shared_ptr<Model> model_;
    Engine& engine_;
    std::unique_ptr<Cache> cache_;
};

} // namespace torchscope
