#pragma once

#include "visualize/visualization.h"

#include <ATen/core/Tensor.h>

namespace torchscope {

class SeededRandom;

// One random affine change per image ([N, C, H, W]): a whole-pixel shift in [-jitter, jitter]
// each way, a scale in [scaleMin, scaleMax] and a rotation in ±rotateDegrees, drawn in that
// order (x shift, y shift, scale, angle) and applied in one bilinear resampling that reflects at
// the borders (affine_grid and grid_sample, corners not aligned). Differentiable in `images`.
at::Tensor robustlyTransformed(const at::Tensor& images, const RobustnessTransforms& transforms, SeededRandom& random);

} // namespace torchscope
