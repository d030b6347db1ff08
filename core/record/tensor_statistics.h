#pragma once

#include "record/layer_statistics.h"

#include <ATen/core/Tensor.h>

namespace torchscope {

// Statistics of a batch [N, C, ...] (or [N, F]); computed on the tensor's device.
LayerStatistics computeLayerStatistics(const at::Tensor& values, int bins = 64);

} // namespace torchscope
