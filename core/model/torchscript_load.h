#pragma once

// Loading a TorchScript archive (LibTorch's torch::jit::load) so that no file can end the process.
// Torch in this header: included by the few files that load TorchScript.

#include <torch/script.h>

#include <string>

namespace torchscope {

// torch::jit::load without the file's debug records (code/*.debug_pkl: the Python lines its code came
// from). LibTorch unpickles those only when a message quotes the code, inside
// torch::jit::ErrorReport::what(), which may not throw: a damaged record ended the process, and one
// that declares gigabytes made it allocate them (both found by fuzz_model_load). The code and the
// weights are all a model needs; messages quote its TorchScript code rather than its Python.
torch::jit::Module loadTorchScript(
    const std::string& path, const c10::Device& device, torch::jit::ExtraFilesMap& extra);

} // namespace torchscope
