#pragma once

#include <cstddef>
#include <string>

namespace torchscope {

// glibc gives every block above its mmap threshold (dynamic, 32 MiB at most) a mapping of its own
// and unmaps it when the block is freed, and it returns the heap's free top to the kernel once it
// passes 128 KiB. A model's activations are tens of MiB each and freed after every batch, so each
// forward faulted all of their pages in again: a fifth of a ResNet-50 pass was the kernel zeroing
// pages (perf); dissect --method invert of its layer4 over 160 images took 54-62 s instead of 38-41.
// tuneHeapForTensors serves blocks up to HeapLargeBlockBytes from the heap and keeps up to
// HeapRetainedBytes of freed memory with the process for the next batch. On a worker thread glibc's
// arena heaps hold 64 MiB: blocks up to that are kept there too, larger ones are still mapped anew
// (the main thread keeps them up to 256 MiB). The executables call it first thing. It returns
// whether glibc took the settings: not when the user set their own (MALLOC_MMAP_THRESHOLD_,
// MALLOC_TRIM_THRESHOLD_, MALLOC_TOP_PAD_, MALLOC_MMAP_MAX_, or GLIBC_TUNABLES naming
// glibc.malloc), not under ASan (its allocator ignores mallopt). Under a preloaded allocator (jemalloc,
// tcmalloc) glibc takes them and nothing changes.
constexpr size_t HeapLargeBlockBytes = size_t{256} << 20;
constexpr size_t HeapRetainedBytes = size_t{512} << 20;

bool tuneHeapForTensors();

// The malloc setting the environment already makes (its variable's name), or "" for none. getenv is
// the lookup, replaceable in tests.
std::string userHeapSetting(const char* (*getenv)(const char*));

} // namespace torchscope
