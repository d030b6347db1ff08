#pragma once

// NumPy .npy / .npz and safetensors encodings of plain tensors.

#include <ATen/core/Tensor.h>

#include <string>
#include <utility>
#include <vector>

namespace torchscope {

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

// One .npy file's bytes (format version 1.0), little-endian, C order.
std::string encodeNpy(const at::Tensor& tensor);

// A zip of KEY.npy entries (stored, as numpy.savez writes them), written atomically.
void writeNpz(const std::string& path, const NamedTensors& tensors);

// The safetensors layout: 8-byte little-endian header size, JSON header, raw data. A manifest
// (JSON text) goes into the header's __metadata__ as "torchscope_manifest".
void writeSafetensors(const std::string& path, const NamedTensors& tensors, const std::string& manifest = {});

} // namespace torchscope
