// The default memory cap of batched analyses (common/memory_budget): a quarter of what the machine has
// available (MemAvailable), the same for the CLI and the window.
#include "common/memory_budget.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

namespace torchscope::test {
namespace {

TEST(MemoryBudget, AvailableMemoryIsMeminfosMemAvailable)
{
    const std::string meminfo = "MemTotal:       32768000 kB\n"
                                "MemFree:          512000 kB\n"
                                "MemAvailable:   17000000 kB\n"
                                "Buffers:           12345 kB\n";
    // Not MemFree (what sysconf's _SC_AVPHYS_PAGES counts): a machine with a large page cache has
    // little free memory and much available.
    EXPECT_EQ(availableMemoryFromMeminfo(meminfo), int64_t{17000000} * 1024);
    EXPECT_EQ(availableMemoryFromMeminfo("MemAvailable: 0 kB\n"), 0);
    EXPECT_FALSE(availableMemoryFromMeminfo("MemTotal: 1 kB\nMemFree: 2 kB\n"));
    EXPECT_FALSE(availableMemoryFromMeminfo("MemAvailable: lots kB\n"));
    EXPECT_FALSE(availableMemoryFromMeminfo("MemAvailable: 12 MB\n"));
    EXPECT_FALSE(availableMemoryFromMeminfo("MemAvailable: -5 kB\n"));
    EXPECT_FALSE(availableMemoryFromMeminfo("MemAvailable: 99999999999999999 kB\n")); // bytes overflow int64
    EXPECT_FALSE(availableMemoryFromMeminfo(""));
}

TEST(MemoryBudget, TheDefaultIsAQuarterOfWhatThisMachineHasAvailable)
{
    FILE* file = std::fopen("/proc/meminfo", "r");
    if (!file)
        GTEST_SKIP() << "no /proc/meminfo on this system";
    long long kibibytes = -1;
    char line[256];
    while (std::fgets(line, sizeof line, file))
        if (std::sscanf(line, "MemAvailable: %lld kB", &kibibytes) == 1)
            break;
    std::fclose(file);
    ASSERT_GE(kibibytes, 0);
    const int64_t expected = std::max<int64_t>(int64_t{256} << 20, kibibytes * 1024 / 4);
    // The two reads are moments apart and the machine's available memory moves: within 64 MiB.
    EXPECT_LE(std::llabs(defaultMemoryBudget() - expected), int64_t{64} << 20);
}

} // namespace
} // namespace torchscope::test
