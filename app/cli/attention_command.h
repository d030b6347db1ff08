#pragma once

#include "cli_options.h"

namespace torchscope::cli {

// torchscope-cli attention: core's attentionMaps on images: per-head probabilities and maps,
// rollout or LeGrad, written as FILE.pt / .npz / .safetensors.
Command attentionCommand();

} // namespace torchscope::cli
