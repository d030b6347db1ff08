#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace torchscope {

// How far a core operation has come (every core operation reports through this one shape): `done` of `total` units
// (images, batches, layers, steps) of `stage` ("activations", "training", ...; empty when there is one stage).
struct Progress {
    int64_t done = 0;
    int64_t total = 0;
    std::string stage;
    std::vector<double> values; // this unit's figures where an operation has them (a probe's loss, ...)
};

// Called by an operation after each unit; returning false cancels it, keeping what is done.
using ProgressCallback = std::function<bool(const Progress&)>;

} // namespace torchscope
