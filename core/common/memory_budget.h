#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace torchscope {

// The memory one batch of evaluated inputs may take when the user does not say (the CLI's
// --memory-mb, the window's runs): a quarter of what the machine has available, at least 256 MiB.
// Available is /proc/meminfo's MemAvailable (free memory and the page cache the kernel can
// reclaim); free memory alone (sysconf) undercounts a machine that has read many files, and the
// batches then shrink to one input. Free memory where /proc/meminfo cannot be read.
int64_t defaultMemoryBudget();

// MemAvailable from the text of /proc/meminfo, in bytes; nothing when the line is missing or malformed.
std::optional<int64_t> availableMemoryFromMeminfo(const std::string& meminfo);

} // namespace torchscope
