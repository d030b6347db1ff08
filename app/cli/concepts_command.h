#pragma once

#include "cli_options.h"

namespace torchscope::cli {

// torchscope-cli dissect: core's dissect (network dissection's IoU, INVERT's AUC, formulas) of
// --layer's units over a --concepts set, written with writeDissection.
Command dissectCommand();

// torchscope-cli concepts make: core's makeSyntheticConcepts (coloured shapes and textures with exact
// masks) into --out.
Command conceptsCommand();
int runConcepts(const CliOptions& options);

} // namespace torchscope::cli
