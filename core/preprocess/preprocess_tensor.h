#pragma once

#include "preprocess/preprocessing.h"

#include <ATen/core/Tensor.h>

namespace torchscope {

// image: float [C, H, W] with values in [0, 1] (C = 1, 3). Returns the preprocessed [C', H', W'],
// computed as torchvision's tensor transforms do (Resize with antialias, CenterCrop, then the
// values scaled, the channels reordered and Normalize).
at::Tensor preprocessImage(const at::Tensor& image, const Preprocessing& preprocessing);

// Label maps [K, H, W] (masks, segmentations; any dtype) carried through the same Resize and
// CenterCrop as the image, with nearest-neighbour resizing: pixel (y, x) of the result labels what
// pixel (y, x) of the preprocessed image shows.
at::Tensor preprocessLabels(const at::Tensor& labels, const Preprocessing& preprocessing);

// What the model saw as a picture: normalisation, scale and channel order undone, grey repeated
// to RGB. input: [C, H, W] (or [1, C, H, W]); returns [H, W, 3] in [0, 1], contiguous, on the CPU.
at::Tensor pictureOfInput(const at::Tensor& input, const Preprocessing& preprocessing);

} // namespace torchscope
