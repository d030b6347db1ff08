#pragma once

#include "cli_options.h"

namespace torchscope::cli {

// torchscope-cli attribute: core's attributeInputs over --input images or a tensor file, written
// with the method names as keys, "targets" and "integrated_gradients:delta", and a manifest.
Command attributeCommand();

} // namespace torchscope::cli
