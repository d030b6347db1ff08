#pragma once

#include <string>
#include <vector>

namespace torchscope {

// The tensor file formats TorchScope writes (the Export menu and --out are built from this).
struct TensorFormatInfo {
    std::string name; // "PyTorch"
    std::string extension; // ".pt"
    std::string description; // what Python reads it with
};

const std::vector<TensorFormatInfo>& tensorFormats();

// The format for a path's extension, or nullptr.
const TensorFormatInfo* tensorFormatForPath(const std::string& path);

} // namespace torchscope
