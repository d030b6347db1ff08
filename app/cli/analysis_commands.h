#pragma once

#include "cli_options.h"
#include "compare/comparison.h"

namespace torchscope::cli {

// torchscope-cli gradcam: core's computeGradCam over --input images, written with writeGradCam.
Command gradCamCommand();
int runGradCam(const CliOptions& options);
// torchscope-cli patch: core's patchImages (patch, ablate, difference), written with writePatch.
Command patchCommand();
int runPatch(const CliOptions& options);
// torchscope-cli compare --maps: core's layerPairMaps for one image, written with writeLayerPairMaps
// (what the window's Compare tab shows for a clicked cell).
int runCompareMaps(const CliOptions& options, const CompareConfig& config);

// torchscope-cli sae train / sae evaluate (sae_run.cpp).
int runSae(const CliOptions& options);

} // namespace torchscope::cli
