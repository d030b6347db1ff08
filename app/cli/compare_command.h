#pragma once

#include "cli_options.h"

namespace torchscope::cli {

int runCompare(const CliOptions& options);

} // namespace torchscope::cli
