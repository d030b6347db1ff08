#pragma once

// Image files as one batch for the workbenches that compare maps across images (attribution,
// attention): an image whose input size differs from the first image's, or that cannot be read,
// is a failure with why; the rest come with the pictures as the model saw them.

#include "common/float_tensor.h"

#include <ATen/core/Tensor.h>

#include <string>
#include <utility>
#include <vector>

namespace torchscope {

struct Preprocessing;

struct SameSizeImages {
    at::Tensor batch; // [N, C, H, W]
    std::vector<std::string> paths; // of the images in the batch, in order
    std::vector<FloatTensor> pictures; // [H, W, 3] in [0, 1] each
    std::vector<std::pair<std::string, std::string>> failures; // image, why
};

// `sizeAdvice` ends the size mismatch's message; `noImages` is the error when no path was given.
// Throws torchscope::Error when no image could be read.
SameSizeImages loadSameSizeImages(const std::vector<std::string>& paths, const Preprocessing& preprocessing,
    const std::string& sizeAdvice, const std::string& noImages);

} // namespace torchscope
