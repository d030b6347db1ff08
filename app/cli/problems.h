#pragma once

// What a command skipped and warned of, on stderr, in the CLI's one wording:
// "torchscope-cli: warning: skipped PATH: WHY" and "torchscope-cli: warning: TEXT".

#include <string>
#include <utility>
#include <vector>

namespace torchscope::cli {

void printSkipped(const std::vector<std::pair<std::string, std::string>>& failures);
void printWarnings(const std::vector<std::string>& warnings);

} // namespace torchscope::cli
