#pragma once

#include "cli_options.h"

namespace torchscope::cli {

// torchscope-cli gradcam: core's computeGradCam over --input images, written with writeGradCam.
int runGradCam(const CliOptions& options);
// torchscope-cli patch: core's patchImages (patch, ablate, difference), written with writePatch.
int runPatch(const CliOptions& options);

} // namespace torchscope::cli
