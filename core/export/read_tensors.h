#pragma once

// Reading back named tensors that Python (or TorchScope) wrote: a .npz archive of .npy arrays
// (numpy.savez), a .safetensors file or a .pt dict of tensors (torch.save). What `evaluate
// --attributions` scores. What a file declares (a record's size, an array's shape, a header's
// length, a tensor's byte range) is held against the bytes that are there before anything is
// allocated.

#include <ATen/core/Tensor.h>

#include <map>
#include <string>

namespace torchscope {

// Throws torchscope::Error saying what the file is when it is neither, or holds an array of a type
// or layout it cannot read (object arrays, Fortran order).
std::map<std::string, at::Tensor> readNamedTensors(const std::string& path);

// One .npy file's bytes as a tensor (little-endian bool, integers, float16/32/64).
at::Tensor decodeNpy(const std::string& bytes, const std::string& name);

} // namespace torchscope
