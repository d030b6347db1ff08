#pragma once

#include "common/float_tensor.h"

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

namespace torchscope {

// A contiguous float copy on the CPU (any dtype, any device).
FloatTensor toFloatTensor(const at::Tensor& tensor);
// Back: a float32 CPU tensor of the values' shape (a copy).
at::Tensor toTensor(const FloatTensor& values);

// "float64", "float32", "bfloat16", "float16" -> the ScalarType; throws torchscope::Error.
at::ScalarType scalarTypeNamed(const std::string& name);

// The values of a tensor as doubles, on the CPU, in row-major order.
std::vector<double> toDoubles(const at::Tensor& tensor);

} // namespace torchscope
