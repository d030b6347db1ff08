#pragma once

#include <string>
#include <vector>

namespace torchscope {

// Loads a shared library that registers TorchScript operators (torchvision's _C.so for
// torchvision::nms / roi_align, or a user's own). Throws torchscope::Error with dlerror's text.
void loadOperatorLibrary(const std::string& path);

// The operator library of the torchvision installed beside the linked LibTorch (a PyPI wheel's
// site-packages), when there is one.
std::vector<std::string> defaultOperatorLibraries();

// For "Unknown builtin op: torchvision::nms": which library provides the namespace, and how to
// give it to TorchScope. Empty when nothing is known about it.
std::string missingOperatorAdvice(const std::string& libtorchMessage);

} // namespace torchscope
