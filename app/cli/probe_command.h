#pragma once

#include "cli_options.h"

namespace torchscope::cli {

// probe train / probe sweep: linear probes on a layer's (or several layers') output.
Command probeCommand();

} // namespace torchscope::cli
