#pragma once

#include <optional>
#include <string>

namespace torchscope {

// Looks at a file that should be a TorchScript archive before LibTorch does, so that a wrong file
// gets a message saying what it actually is (empty, a Git LFS pointer, a state_dict saved with
// torch.save, a truncated download, ...) instead of a zip reader error.
// Returns nothing when the file looks like a TorchScript archive or a torch.export .pt2 archive.
std::optional<std::string> diagnoseModelFile(const std::string& path);

// For a file LibTorch refused although it is a TorchScript archive (an unknown operator, a
// schema it does not know): whether it was probably saved by a newer PyTorch, with the archive's
// file format version and what to do. Empty when the message does not look like that.
std::string newerPyTorchAdvice(const std::string& path, const std::string& libtorchMessage);

// Names what a non-archive file is from its first bytes ("a PNG image", "a text file ...").
std::string describeFileStart(const std::string& bytes);
// The image format the first bytes announce ("a GIF image"); empty when none.
std::string describeImageStart(const std::string& bytes);

} // namespace torchscope
