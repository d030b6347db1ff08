#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace torchscope {

// How far a core operation has come: `done` of `total` units (images, batches, layers, steps) of
// `stage` ("activations", "training", ...; empty when there is one stage).
struct Progress {
    int64_t done = 0;
    int64_t total = 0;
    std::string stage;
};

// Called by an operation after each unit; returning false cancels it, keeping what is done.
using ProgressCallback = std::function<bool(const Progress&)>;

} // namespace torchscope
