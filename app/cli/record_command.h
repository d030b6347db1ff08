#pragma once

#include "cli_options.h"

namespace torchscope::cli {

// torchscope-cli record: recorders folded over image folders or a tensor, in one process or a
// distributed run.
Command recordCommand();

} // namespace torchscope::cli
