#pragma once

#include <optional>
#include <string>

namespace torchscope {

// Looks at a file that should be a TorchScript archive before LibTorch does, so that a wrong file
// gets a message saying what it actually is (empty, a Git LFS pointer, a state_dict saved with
// torch.save, a truncated download, ...) instead of a zip reader error.
// Returns nothing when the file looks like a TorchScript archive.
std::optional<std::string> diagnoseModelFile(const std::string& path);

// Names what a non-archive file is from its first bytes ("a PNG image", "a text file ...").
std::string describeFileStart(const std::string& bytes);

} // namespace torchscope
