#pragma once

#include "cli_options.h"

namespace torchscope::cli {

// torchscope-cli setup: the model's input setup, what the model says about its input, and a copy
// of the model with the setup stored in it (--out).
Command setupCommand();

} // namespace torchscope::cli
