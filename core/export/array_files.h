#pragma once

// NumPy .npy / .npz and safetensors encodings of plain tensors.

#include <ATen/core/Tensor.h>

#include <string>
#include <utility>
#include <vector>

namespace torchscope {

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

// The element types both formats name, one row each: the torch type, NumPy's .npy descr (little-
// endian; null for bfloat16, which NumPy lacks) and the safetensors dtype. The writers and the
// readers (export/read_tensors.h) take them from here.
struct ArrayDtype {
    at::ScalarType type;
    const char* numpy;
    const char* safetensors;
};
const std::vector<ArrayDtype>& arrayDtypes();
ArrayDtype arrayDtypeOf(at::ScalarType type); // throws torchscope::Error for a type with no row

// One .npy file's bytes (format version 1.0), little-endian, C order.
std::string encodeNpy(const at::Tensor& tensor);

// A zip of KEY.npy entries (stored, as numpy.savez writes them), written atomically.
void writeNpz(const std::string& path, const NamedTensors& tensors);

// The safetensors layout: 8-byte little-endian header size, JSON header, raw data. A manifest
// (JSON text) goes into the header's __metadata__ as "torchscope_manifest".
void writeSafetensors(const std::string& path, const NamedTensors& tensors, const std::string& manifest = {});

} // namespace torchscope
