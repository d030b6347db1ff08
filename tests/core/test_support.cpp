#include "test_support.h"

#include <utility>

#include "export/pt_export.h"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <iostream>

#if defined(__SANITIZE_ADDRESS__)
#define TORCHSCOPE_HAVE_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TORCHSCOPE_HAVE_LSAN 1
#endif
#endif
#ifdef TORCHSCOPE_HAVE_LSAN
#include <sanitizer/lsan_interface.h>
#endif

namespace torchscope::test {

std::filesystem::path freshFolder(const std::string& name)
{
    static std::atomic<int> count{0};
    const auto dir = std::filesystem::temp_directory_path()
        / ("torchscope_test_" + name + "_" + std::to_string(::getpid()) + "_" + std::to_string(count++));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
}

LibTorchLeaksIgnored::LibTorchLeaksIgnored()
{
#ifdef TORCHSCOPE_HAVE_LSAN
    __lsan_disable();
#endif
}

LibTorchLeaksIgnored::~LibTorchLeaksIgnored()
{
#ifdef TORCHSCOPE_HAVE_LSAN
    __lsan_enable();
#endif
}

bool inContinuousIntegration()
{
    const char* ci = std::getenv("CI");
    return ci && std::string(ci) == "true";
}

std::string demoModelPath()
{
    return sourceDir() + "/resources/demo/fashion_cnn.pt";
}

std::string demoImage(const std::string& name)
{
    return sourceDir() + "/resources/demo/images/" + name;
}

std::map<std::string, at::Tensor> loadExpected(const std::string& name)
{
    std::map<std::string, at::Tensor> tensors;
    const auto dict = readTorchSaveFile(fixture(name)).toGenericDict();
    for (const auto& entry : dict)
        tensors[entry.key().toStringRef()] = entry.value().toTensor();
    return tensors;
}

at::Tensor loadTensor(const std::string& name)
{
    return readTorchSaveFile(fixture(name)).toTensor();
}

std::shared_ptr<Model> loadModel(const std::string& name)
{
    LoadOptions options;
    options.device = "cpu";
    return Model::load(fixture(name), options);
}

double relativeTolerance(const at::Tensor& expected, double relative)
{
    return relative * std::max(1.0, expected.abs().max().item<double>());
}

double scaledTolerance(const at::Tensor& expected, double relative)
{
    return relative * expected.abs().max().item<double>();
}

std::vector<std::string> loadNames(const std::string& name)
{
    std::ifstream in(fixture(name));
    return nlohmann::json::parse(in).get<std::vector<std::string>>();
}

namespace {

// Names NaN and infinities in either tensor: a comparison must never pass over them.
std::string nonFinite(const at::Tensor& actual, const at::Tensor& expected)
{
    std::string problems;
    for (const auto& [name, t] : {std::pair{"actual", actual}, std::pair{"expected", expected}}) {
        if (!t.is_floating_point() || t.numel() == 0)
            continue;
        const at::Tensor values = t.cpu();
        const int64_t nans = values.isnan().sum().item<int64_t>();
        const int64_t infinities = values.isinf().sum().item<int64_t>();
        if (nans || infinities)
            problems += std::string(problems.empty() ? "" : ", ") + name + " has " + std::to_string(nans) + " NaN and "
                + std::to_string(infinities) + " infinite values";
    }
    return problems;
}

} // namespace

::testing::AssertionResult tensorsClose(
    const std::string& label, const at::Tensor& actual, const at::Tensor& expected, double tolerance)
{
    if (actual.sizes() != expected.sizes())
        return ::testing::AssertionFailure()
            << label << ": shape " << actual.sizes() << " != expected " << expected.sizes();
    if (const std::string problems = nonFinite(actual, expected); !problems.empty())
        return ::testing::AssertionFailure() << label << ": " << problems;
    if (actual.numel() == 0)
        return ::testing::AssertionSuccess();
    const double diff = (actual.cpu().to(at::kDouble) - expected.cpu().to(at::kDouble)).abs().max().item<double>();
    std::cout << "  " << label << " " << actual.sizes() << " max abs diff " << diff << '\n';
    if (!(diff <= tolerance)) // NaN-safe: a NaN difference fails too
        return ::testing::AssertionFailure() << label << ": max abs diff " << diff << " > " << tolerance;
    return ::testing::AssertionSuccess();
}

::testing::AssertionResult tensorsCloseRelative(
    const std::string& label, const at::Tensor& actual, const at::Tensor& expected, double relative)
{
    if (const std::string problems = nonFinite(actual, expected); !problems.empty())
        return ::testing::AssertionFailure() << label << ": " << problems;
    const double scale = expected.numel() ? expected.abs().max().item<double>() : 0.0;
    if (expected.numel() && !(scale > 0.0))
        return ::testing::AssertionFailure() << label << ": the expected values are all zero; compare them exactly";
    std::cout << "  " << label << ": values up to " << scale << '\n';
    return tensorsClose(label, actual, expected, relative * scale);
}

} // namespace torchscope::test
