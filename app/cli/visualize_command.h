#pragma once

#include "cli_options.h"

namespace torchscope::cli {

// torchscope-cli visualize: feature visualisations of a layer's channels, with contact sheets.
// Built with the imaging target (PNG files need OpenCV).
Command visualizeCommand(); // its options: image_commands.cpp
int runVisualize(const CliOptions& options);

} // namespace torchscope::cli
