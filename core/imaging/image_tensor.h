#pragma once

#include "imaging/image_decoder.h"
#include "preprocess/preprocessing.h"

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

namespace torchscope {

// [C, H, W] float tensor in [0, 1] over a decoded image.
at::Tensor imageToTensor(const DecodedImage& image);

// Decodes and preprocesses images into one [N, C, H, W] batch. All must end at the same size
// (a crop makes sure of it); otherwise throws torchscope::Error naming the sizes.
at::Tensor loadImageBatch(const std::vector<std::string>& paths, const Preprocessing& preprocessing);

} // namespace torchscope
