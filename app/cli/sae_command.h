#pragma once

#include "cli_options.h"

namespace torchscope::cli {

// torchscope-cli sae train / sae evaluate: core's trainSparseAutoencoders (several layers from one
// pass over --images, resumable) and evaluateSparseAutoencoder (reconstruction and the model's
// output with the reconstruction spliced in).
Command saeCommand();

} // namespace torchscope::cli
