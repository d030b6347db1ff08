#include "problems.h"

#include <iostream>

namespace torchscope::cli {

void printSkipped(const std::vector<std::pair<std::string, std::string>>& failures)
{
    for (const auto& [path, why] : failures)
        std::cerr << "torchscope-cli: warning: skipped " << path << ": " << why << '\n';
}

void printWarnings(const std::vector<std::string>& warnings)
{
    for (const auto& warning : warnings)
        std::cerr << "torchscope-cli: warning: " << warning << '\n';
}

} // namespace torchscope::cli
