#pragma once

// One image through a layer of each of two runs: two models, two checkpoints, or one model in two
// precisions. What the Compare tab shows for a clicked cell of its CKA or drift table, and what
// `torchscope-cli compare --maps IMAGE` writes.

#include "common/float_tensor.h"
#include "preprocess/preprocessing.h"

#include <string>
#include <vector>

namespace torchscope {

struct ExportManifest;

class Engine;

struct LayerPairRequest {
    std::string image;
    std::string layerA, layerB;
    Preprocessing preprocessing; // A's input setup, used for both
    // The dtype each engine's model was loaded in ("" when it keeps its saved dtypes): the image
    // is converted to it, as compare's precision mode does.
    std::string dtypeA, dtypeB;
};

struct LayerPairResult {
    std::string image;
    std::string layerA, layerB;
    FloatTensor a, b; // the image's output of each layer, as float32: [C, H, W], [F], [T, D] ...
};

// Throws torchscope::Error for an unreadable image or a layer either model does not have.
LayerPairResult layerPairMaps(Engine& a, Engine& b, const LayerPairRequest& request);

// Writes keys "a" and "b" (FILE.pt, .npz, .npy folders, .safetensors, as `run --out` does); returns
// the keys the format left out. A manifest is written beside.
std::vector<std::string> writeLayerPairMaps(
    const std::string& path, const LayerPairResult& result, const ExportManifest* manifest = nullptr);

} // namespace torchscope
