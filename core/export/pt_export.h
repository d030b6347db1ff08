#pragma once

#include <ATen/core/ivalue.h>

#include <string>
#include <utility>
#include <vector>

namespace torchscope {

// A detached copy on the CPU, tensors inside lists, tuples and dicts included.
c10::IValue toCpu(const c10::IValue& value);

// Writes one dictionary {key: value} that Python's torch.load reads (tensors moved to the CPU).
// Atomic: on failure no partial file is left behind.
void writePtDictionary(const std::string& path, const std::vector<std::pair<std::string, c10::IValue>>& values);

// Reads a file written by Python's torch.save (a tensor, a list or a dict of them).
// Throws torchscope::Error saying what the file is when it is something else.
c10::IValue readTorchSaveFile(const std::string& path);

} // namespace torchscope
