#pragma once

#include "record/layer_statistics.h"

#include <ATen/core/Tensor.h>

namespace torchscope {

// Statistics of a batch [N, C, ...] (or [N, F]); computed on the tensor's device.
LayerStatistics computeLayerStatistics(const at::Tensor& values, int bins = 64);

// The recorders' streaming top-k: which rows hold the k highest of each column (channel) of
// values [M, C], with their samples' ids [M, C], as row indices [k, C], highest first. Ties go to
// the lower sample, so the result does not depend on the order samples came in (one process, or
// several processes' results merged). Fold a new batch in by concatenating it to the kept rows.
at::Tensor topRowsPerChannel(const at::Tensor& values, const at::Tensor& ids, int64_t k);

} // namespace torchscope
