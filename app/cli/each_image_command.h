#pragma once

#include "cli_options.h"

namespace torchscope::cli {

// run --each-image: core's per-image run (the window's), one image at a time. Built with OpenCV
// only; image_inputs_unavailable.cpp refuses it otherwise.
int runEachImage(const CliOptions& options);

} // namespace torchscope::cli
