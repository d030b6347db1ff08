#include "common/heap_tuning.h"

#include <climits>
#include <cstdlib>
#include <string_view>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace torchscope {

std::string userHeapSetting(const char* (*getenv)(const char*))
{
    for (const char* name : {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_"})
        if (getenv(name) != nullptr)
            return name;
    const char* tunables = getenv("GLIBC_TUNABLES");
    if (tunables != nullptr && std::string_view(tunables).find("glibc.malloc.") != std::string_view::npos)
        return "GLIBC_TUNABLES";
    return "";
}

bool tuneHeapForTensors()
{
#if defined(__GLIBC__)
    if (!userHeapSetting([](const char* name) -> const char* { return std::getenv(name); }).empty())
        return false;
    // Both: a fixed mmap threshold alone still trims the freed top at 128 KiB.
    static_assert(HeapLargeBlockBytes <= INT_MAX && HeapRetainedBytes <= INT_MAX, "mallopt takes an int");
    return mallopt(M_MMAP_THRESHOLD, static_cast<int>(HeapLargeBlockBytes)) == 1
        && mallopt(M_TRIM_THRESHOLD, static_cast<int>(HeapRetainedBytes)) == 1;
#else
    return false;
#endif
}

} // namespace torchscope
