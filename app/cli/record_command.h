#pragma once

#include "cli_options.h"

namespace torchscope::cli {

int runRecord(const CliOptions& options);

} // namespace torchscope::cli
