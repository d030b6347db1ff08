#pragma once

#include "cli_options.h"

namespace torchscope::cli {

// torchscope-cli inspect: the module tree (and output shapes from a dry run).
Command inspectCommand();
// torchscope-cli analyses: the table of analyses (core/analysis/analysis_table.h).
Command analysesCommand();
// torchscope-cli run: grabs, edits, truncation and probes over inputs (--each-image: the window's
// per-image run, each_image_command.h).
Command runCommand();

} // namespace torchscope::cli
