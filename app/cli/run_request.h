#pragma once

#include "cli_options.h"
#include "graph/request.h"

#include <ATen/core/Tensor.h>

#include <vector>

namespace torchscope {
struct ModelSetup;
}

namespace torchscope::cli {

// run's --grab, --edit, --truncate, --target and --target-box as an engine request. Add and replace
// edits read their tensor files into `editTensors`, in the order of the request's edits.
Request runRequest(const CliOptions& options, const ModelSetup& setup, std::vector<at::Tensor>& editTensors);

// A model failure that points at the input setup (core's inputMismatchAdvice), with what to give.
std::string explainSetupProblem(const std::string& message, const std::string& advice);

} // namespace torchscope::cli
