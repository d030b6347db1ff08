#pragma once

#include "cli_options.h"
#include "export/manifest.h"

#include <string>
#include <vector>

namespace torchscope {
class Model;
struct ModelSetup;
} // namespace torchscope

namespace torchscope::cli {

// The manifest of what a command writes: the command, its model (path, device), the input setup
// and labels it used, the edits and truncation given, `images` in sample order (files that are
// not there, such as a tensor file's rows, are left out) and the command's other options.
ExportManifest cliManifest(
    const CliOptions& options, const Model& model, const ModelSetup& setup, const std::vector<std::string>& images);

} // namespace torchscope::cli
