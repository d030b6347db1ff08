#pragma once

#include "common/float_tensor.h"

#include <ATen/core/Tensor.h>

namespace torchscope {

// A contiguous float copy on the CPU (any dtype, any device).
FloatTensor toFloatTensor(const at::Tensor& tensor);

} // namespace torchscope
