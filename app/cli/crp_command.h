#pragma once

#include "cli_options.h"

namespace torchscope::cli {

// torchscope-cli crp: core's computeConceptRelevance on --input images (each channel's relevance at
// --layer, the chosen channels' conditional maps, RelMax / ActMax references over a folder),
// written with writeConceptRelevance.
Command crpCommand();

} // namespace torchscope::cli
