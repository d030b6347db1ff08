#pragma once

// What the Compare panel asks of its jobs (core/compare over an image folder; one image through a
// layer of each model is imaging/layer_pair_maps) and gets back. No Torch.

#include "common/float_tensor.h"
#include "compare/comparison.h"
#include "imaging/layer_pair_maps.h"
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

} // namespace torchscope

Q_DECLARE_METATYPE(torchscope::CompareResultPtr)
Q_DECLARE_METATYPE(torchscope::LayerPairResult)
