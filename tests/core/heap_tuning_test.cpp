// The heap's settings the executables make (common/heap_tuning.h): with glibc's defaults a freed
// block the size of a batch's activations faults its pages in again when the next one is
// allocated; tuned, the freed memory is reused, on the main thread and on a worker's; a user's own
// malloc settings are left alone. The page faults are the kernel's count (getrusage's ru_minflt),
// compared as ratios (with transparent huge pages a 64 MiB block faults 32 times, not 16,384). Each
// measurement runs in a child process: glibc's settings are the process's, and a tuned heap must not
// reach the next test in whatever order or repetition GoogleTest runs them. Not under ASan: its
// allocator is not glibc's and ignores mallopt.
#include "common/heap_tuning.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <sys/resource.h>
#include <sys/wait.h>
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

constexpr size_t MiB = size_t{1} << 20;

// Page faults of allocating, filling and freeing `count` blocks of `bytes`, one after another, on
// this thread (RUSAGE_THREAD). The allocator is called through a volatile pointer so that the
// compiler cannot drop the pair.
long faultsOfBlocks(int count, size_t bytes)
{
    void* (*volatile allocate)(size_t) = std::malloc;
    rusage before{}, after{};
    getrusage(RUSAGE_THREAD, &before);
    for (int i = 0; i < count; ++i) {
        auto* block = static_cast<volatile char*>(allocate(bytes));
        if (block == nullptr)
            return -1;
        std::memset(const_cast<char*>(block), i + 1, bytes);
        if (block[bytes - 1] != i + 1)
            return -1;
        std::free(const_cast<char*>(block));
    }
    getrusage(RUSAGE_THREAD, &after);
    return after.ru_minflt - before.ru_minflt;
}

long faultsOnAWorkerThread(int count, size_t bytes)
{
    long faults = -1;
    std::thread([&] { faults = faultsOfBlocks(count, bytes); }).join();
    return faults;
}

// What `measure` returns, measured in a child process (empty if the child failed).
std::vector<long> inChild(const std::function<std::vector<long>()>& measure)
{
    int pipeEnds[2];
    if (pipe(pipeEnds) != 0)
        return {};
    const pid_t child = fork();
    if (child == 0) {
        close(pipeEnds[0]);
        const std::vector<long> values = measure();
        const auto bytes = static_cast<ssize_t>(values.size() * sizeof(long));
        _exit(write(pipeEnds[1], values.data(), static_cast<size_t>(bytes)) == bytes ? 0 : 1);
    }
    close(pipeEnds[1]);
    std::vector<long> values(16);
    const ssize_t got = child > 0 ? read(pipeEnds[0], values.data(), values.size() * sizeof(long)) : -1;
    close(pipeEnds[0]);
    int status = 0;
    if (child > 0)
        waitpid(child, &status, 0);
    values.resize(
        got > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? static_cast<size_t>(got) / sizeof(long) : 0);
    return values;
}

bool environmentSetsMalloc()
{
    return !userHeapSetting([](const char* name) -> const char* { return std::getenv(name); }).empty();
}

TEST(HeapTuning, AUsersOwnSettingKeepsGlibcsDefaults)
{
    if (environmentSetsMalloc())
        GTEST_SKIP() << "this environment sets glibc's malloc itself";
    const std::vector<long> measured = inChild([] {
        setenv("MALLOC_TOP_PAD_", "131072", 1); // glibc's default, named: the user's setting
        const bool tuned = tuneHeapForTensors();
        const long one = faultsOfBlocks(1, 64 * MiB);
        return std::vector<long>{tuned ? 1 : 0, one, faultsOfBlocks(10, 64 * MiB)};
    });
    ASSERT_EQ(measured.size(), 3u);
    EXPECT_EQ(measured[0], 0) << "tuned over MALLOC_TOP_PAD_";
    EXPECT_GT(measured[1], 0);
    EXPECT_GE(measured[2], 5 * measured[1]) << "glibc's defaults map every 64 MiB block afresh";
}

// Ten blocks' faults before and after tuning, in a child: tuning must take and cut them fourfold.
void expectTuningCutsTheFaults(long (*tenBlocks)(), const char* what)
{
    const std::vector<long> measured = inChild([tenBlocks] {
        const long untuned = tenBlocks();
        const bool tuned = tuneHeapForTensors();
        return std::vector<long>{untuned, tuned ? 1 : 0, tenBlocks()};
    });
    ASSERT_EQ(measured.size(), 3u);
    EXPECT_EQ(measured[1], 1);
    EXPECT_GT(measured[0], 0);
    EXPECT_LT(4 * measured[2], measured[0])
        << what << ": " << measured[0] << " faults untuned, " << measured[2] << " tuned";
}

TEST(HeapTuning, FreedActivationsAreReusedWithoutFaultingTheirPagesAgain)
{
    if (environmentSetsMalloc())
        GTEST_SKIP() << "this environment sets glibc's malloc itself";
    expectTuningCutsTheFaults([] { return faultsOfBlocks(10, 64 * MiB); }, "ten 64 MiB blocks");
}

// A worker's arena: blocks up to its 64 MiB heap are kept too (the window runs models on worker
// threads). 48 MiB: above the 32 MiB up to which glibc's own dynamic threshold would keep them.
TEST(HeapTuning, AWorkerThreadReusesFreedBlocksToo)
{
    if (environmentSetsMalloc())
        GTEST_SKIP() << "this environment sets glibc's malloc itself";
    expectTuningCutsTheFaults([] { return faultsOnAWorkerThread(10, 48 * MiB); }, "ten 48 MiB blocks on a worker");
}

#endif

} // namespace
} // namespace torchscope
