#pragma once

#include "cli_options.h"

namespace torchscope::cli {

// torchscope-cli sanity: core's checkSanity on a second copy of the model, the similarity of each
// randomised map to the original per layer in JSON or CSV, and every map with --maps.
Command sanityCommand();

} // namespace torchscope::cli
