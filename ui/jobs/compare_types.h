#pragma once

// What the Compare panel asks of its jobs (core/compare over an image folder; one image through a
// layer of each model is compare/layer_pair_maps) and gets back. No Torch.

#include "common/float_tensor.h"
#include "compare/compare_folder.h"
#include "compare/comparison.h"
#include "compare/layer_pair_maps.h"
#include "preprocess/preprocessing.h"

#include <QMetaType>

#include <memory>
#include <string>

namespace torchscope {

using CompareResultPtr = std::shared_ptr<const CompareResult>;

} // namespace torchscope

Q_DECLARE_METATYPE(torchscope::CompareResultPtr)
Q_DECLARE_METATYPE(torchscope::LayerPairResult)
