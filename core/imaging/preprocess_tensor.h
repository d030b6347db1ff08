#pragma once

#include "imaging/preprocessing.h"

#include <ATen/core/Tensor.h>

namespace torchscope {

// image: float [C, H, W] with values in [0, 1] (C = 1, 3). Returns the preprocessed [C', H', W'],
// computed as torchvision's tensor transforms do (Resize with antialias, CenterCrop, Normalize).
at::Tensor preprocessImage(const at::Tensor& image, const Preprocessing& preprocessing);

} // namespace torchscope
