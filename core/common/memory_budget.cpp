#include "common/memory_budget.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>

#include <unistd.h>

namespace torchscope {

std::optional<int64_t> availableMemoryFromMeminfo(const std::string& meminfo)
{
    std::istringstream lines(meminfo);
    std::string line;
    while (std::getline(lines, line)) {
        if (line.rfind("MemAvailable:", 0) != 0)
            continue;
        std::istringstream fields(line.substr(13));
        int64_t kibibytes = -1;
        std::string unit;
        // The kernel writes "MemAvailable:   17000000 kB" (kB meaning KiB).
        if (!(fields >> kibibytes >> unit) || kibibytes < 0 || unit != "kB"
            || kibibytes > std::numeric_limits<int64_t>::max() / 1024)
            return std::nullopt;
        return kibibytes * 1024;
    }
    return std::nullopt;
}

int64_t defaultMemoryBudget()
{
    std::optional<int64_t> available;
    if (std::ifstream file("/proc/meminfo"); file) {
        std::stringstream text;
        text << file.rdbuf();
        available = availableMemoryFromMeminfo(text.str());
    }
    if (!available) {
        const long pages = sysconf(_SC_AVPHYS_PAGES), size = sysconf(_SC_PAGESIZE);
        available = pages > 0 && size > 0 ? int64_t{pages} * size : int64_t{4} << 30;
    }
    return std::max<int64_t>(int64_t{256} << 20, *available / 4);
}

} // namespace torchscope
