// The heap's settings the executables make (common/heap_tuning.h): with glibc's defaults a freed
// block the size of a batch's activations faults every page in again when the next one is
// allocated; tuned, the freed memory is reused; a user's own malloc settings are left alone. The
// page faults are the kernel's count (getrusage's ru_minflt). Not under ASan: its allocator is
// not glibc's and ignores mallopt.
#include "common/heap_tuning.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include <sys/resource.h>
#include <unistd.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TORCHSCOPE_TEST_UNDER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define TORCHSCOPE_TEST_UNDER_ASAN 1
#endif

namespace torchscope {
namespace {

std::map<std::string, std::string> fakeEnvironment;

const char* fakeGetenv(const char* name)
{
    const auto found = fakeEnvironment.find(name);
    return found == fakeEnvironment.end() ? nullptr : found->second.c_str();
}

TEST(HeapTuning, NamesTheMallocSettingAUserMade)
{
    fakeEnvironment = {{"HOME", "/root"}, {"GLIBC_TUNABLES", "glibc.rtld.nns=2"}};
    EXPECT_EQ(userHeapSetting(fakeGetenv), "");
    for (const char* name :
        {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_"}) {
        fakeEnvironment = {{name, "1048576"}};
        EXPECT_EQ(userHeapSetting(fakeGetenv), name);
    }
    fakeEnvironment = {{"GLIBC_TUNABLES", "glibc.rtld.nns=2:glibc.malloc.trim_threshold=1048576"}};
    EXPECT_EQ(userHeapSetting(fakeGetenv), "GLIBC_TUNABLES");
}

#if defined(__GLIBC__) && !defined(TORCHSCOPE_TEST_UNDER_ASAN)

constexpr size_t BlockBytes = size_t{64} << 20; // a batch of 16 ResNet-50 conv1 outputs is 49 MiB

// Page faults of allocating, filling and freeing a 64 MiB block ten times. The allocator is called
// through a volatile pointer so that the compiler cannot drop the pair.
long faultsOfTenBlocks()
{
    void* (*volatile allocate)(size_t) = std::malloc;
    rusage before{}, after{};
    getrusage(RUSAGE_SELF, &before);
    for (int i = 0; i < 10; ++i) {
        auto* block = static_cast<volatile char*>(allocate(BlockBytes));
        if (block == nullptr)
            return -1;
        std::memset(const_cast<char*>(block), i + 1, BlockBytes);
        if (block[BlockBytes - 1] != i + 1)
            return -1;
        std::free(const_cast<char*>(block));
    }
    getrusage(RUSAGE_SELF, &after);
    return after.ru_minflt - before.ru_minflt;
}

long pagesPerBlock()
{
    return static_cast<long>(BlockBytes) / sysconf(_SC_PAGESIZE);
}

// First in the file: a tuned heap in the same process would hide glibc's defaults (ctest runs each
// test in a process of its own).
TEST(HeapTuning, AUsersOwnSettingKeepsGlibcsDefaults)
{
    if (!userHeapSetting([](const char* name) -> const char* { return std::getenv(name); }).empty())
        GTEST_SKIP() << "this environment sets glibc's malloc itself";
    ASSERT_EQ(setenv("MALLOC_TOP_PAD_", "131072", 1), 0);
    const bool tuned = tuneHeapForTensors();
    unsetenv("MALLOC_TOP_PAD_");
    EXPECT_FALSE(tuned);
    EXPECT_GE(faultsOfTenBlocks(), 9 * pagesPerBlock()); // a fresh mapping every time
}

TEST(HeapTuning, FreedActivationsAreReusedWithoutFaultingTheirPagesAgain)
{
    if (!userHeapSetting([](const char* name) -> const char* { return std::getenv(name); }).empty())
        GTEST_SKIP() << "this environment sets glibc's malloc itself";
    const long untuned = faultsOfTenBlocks();
    EXPECT_GE(untuned, 9 * pagesPerBlock()); // glibc's defaults: every block mapped afresh
    ASSERT_TRUE(tuneHeapForTensors());
    const long tuned = faultsOfTenBlocks();
    EXPECT_GE(tuned, 0);
    EXPECT_LE(tuned, 2 * pagesPerBlock()) << "untuned: " << untuned; // the first block's pages, once
}

#endif

} // namespace
} // namespace torchscope
