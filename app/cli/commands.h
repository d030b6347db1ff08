#pragma once

#include "cli_options.h"

namespace torchscope::cli {

int runInspect(const CliOptions& options);
int runModel(const CliOptions& options);

} // namespace torchscope::cli
