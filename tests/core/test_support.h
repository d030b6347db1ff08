#pragma once

#include "graph/engine.h"
#include "model/model.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace torchscope::test {

std::string fixture(const std::string& name);
// The clone's root folder (resources/, tests/data/ beneath it).
std::string sourceDir();
// The bundled demo (resources/demo): its model file and one of its images.
std::string demoModelPath();
std::string demoImage(const std::string& name);

// An empty folder of this test's own under the temporary directory: named after `name`, this
// process and a count, so two test processes (ctest --parallel, two CI runs) never share one.
std::filesystem::path freshFolder(const std::string& name);

// True when CI=true: there every capability the build can have must be present.
bool inContinuousIntegration();

// Skips a test whose capability this build or machine lacks, except under CI=true, where the
// loss of a feature must fail the run rather than pass unseen. (CUDA tests skip with GTEST_SKIP.)
#define TORCHSCOPE_MISSING_CAPABILITY(what)                                                                            \
    do {                                                                                                               \
        if (::torchscope::test::inContinuousIntegration())                                                             \
            FAIL() << "missing under CI=true: " << (what);                                                             \
        GTEST_SKIP() << "missing: " << (what);                                                                         \
    } while (false)

// A dictionary written by Python's torch.save in the fixture script.
std::map<std::string, at::Tensor> loadExpected(const std::string& name);
at::Tensor loadTensor(const std::string& name);

std::shared_ptr<Model> loadModel(const std::string& name);

// Compares and prints the max abs difference, so the log shows how close every value was. Fails
// on a NaN or an infinity in either tensor, whatever the tolerance.
::testing::AssertionResult tensorsClose(
    const std::string& label, const at::Tensor& actual, const at::Tensor& expected, double tolerance = 0.0);
// The same with a tolerance of `relative` times the largest expected magnitude: for gradients and
// scores far from 1. Expected values that are all zero fail (compare those exactly).
::testing::AssertionResult tensorsCloseRelative(
    const std::string& label, const at::Tensor& actual, const at::Tensor& expected, double relative);

// For networks whose activations grow large (random-weight detectors): tolerance scaled by the
// expected values' magnitude.
double relativeTolerance(const at::Tensor& expected, double relative);

// A tolerance of `relative` times the largest expected magnitude (no floor of 1): for gradients
// and scores much smaller than 1.
double scaledTolerance(const at::Tensor& expected, double relative);

// Names of a JSON list of strings written by the fixture script.
std::vector<std::string> loadNames(const std::string& name);

// While alive, LeakSanitizer ignores what is allocated: for LibTorch calls that leak inside
// LibTorch (a TorchScript import that fails part-way keeps its half-built graphs), not ours.
struct LibTorchLeaksIgnored {
    LibTorchLeaksIgnored();
    ~LibTorchLeaksIgnored();
    LibTorchLeaksIgnored(const LibTorchLeaksIgnored&) = delete;
    LibTorchLeaksIgnored& operator=(const LibTorchLeaksIgnored&) = delete;
};

// Runs `body` and returns the torchscope::Error message it throws ("" when it throws nothing).
template <typename F> std::string errorOf(F&& body)
{
    try {
        body();
    } catch (const std::exception& e) {
        return e.what();
    }
    return {};
}

} // namespace torchscope::test
