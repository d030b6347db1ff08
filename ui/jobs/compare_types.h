#pragma once

// What the Compare panel asks of its jobs (core/compare over an image folder, and one image through
// a layer of each model) and gets back. No Torch.

#include "common/float_tensor.h"
#include "compare/comparison.h"
#include "preprocess/preprocessing.h"

#include <QMetaType>
#include <memory>
#include <string>

namespace torchscope {

struct CompareRequest {
    CompareConfig config;
    std::string modelA;
    std::string modelB; // Cka, Checkpoints
    std::string folder; // images; subfolders are read too
    Preprocessing preprocessing; // model A's input setup, for both
    int batch = 16;
    std::string device = "cpu"; // A and B (Precision chooses its own)
};
using CompareResultPtr = std::shared_ptr<const CompareResult>;

// One image through A and B: a layer of each, for the cell of the heat map that was clicked.
struct LayerPairMaps {
    std::string image;
    std::string layerA, layerB;
    FloatTensor a, b; // one sample's output: [C, H, W], [F] ...
};

} // namespace torchscope

Q_DECLARE_METATYPE(torchscope::CompareResultPtr)
Q_DECLARE_METATYPE(torchscope::LayerPairMaps)
