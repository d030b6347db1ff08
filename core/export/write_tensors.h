#pragma once

#include <ATen/core/ivalue.h>

#include <string>
#include <utility>
#include <vector>

namespace torchscope {

using NamedValues = std::vector<std::pair<std::string, c10::IValue>>;

// Writes the values in the format the path's extension names (.pt, .npz, .safetensors),
// atomically. .pt keeps every value; the array formats keep tensors and return the keys of the
// values they had to leave out (tuples, dicts). Throws torchscope::Error.
std::vector<std::string> writeTensors(const std::string& path, const NamedValues& values);

} // namespace torchscope
