#pragma once

#include "cli_options.h"

namespace torchscope::cli {

// torchscope-cli compare: two models (CKA), two checkpoints or two precisions, layer by layer.
Command compareCommand();

} // namespace torchscope::cli
