#pragma once

#include "cli_options.h"

namespace torchscope::cli {

// torchscope-cli evaluate: the maps attribute makes (or --attributions holds) scored by core's
// evaluateFaithfulness, per image and as mean and sd per method and metric, in JSON or CSV.
Command evaluateCommand();

} // namespace torchscope::cli
