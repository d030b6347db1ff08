#pragma once

#include <ATen/core/ivalue.h>

#include <string>
#include <utility>
#include <vector>

namespace torchscope {

struct ExportManifest;

using NamedValues = std::vector<std::pair<std::string, c10::IValue>>;

// Writes the values in the format the path's extension names (.pt, .npz, .safetensors),
// atomically. .pt keeps every value; the array formats keep tensors and return the keys of the
// values they had to leave out (tuples, dicts). With a manifest, NAME.manifest.json is written
// beside the file (its keys, when not given, are the values' capture keys) and a .safetensors file
// carries it in its metadata as "torchscope_manifest". Throws torchscope::Error.
std::vector<std::string> writeTensors(
    const std::string& path, const NamedValues& values, const ExportManifest* manifest = nullptr);

} // namespace torchscope
