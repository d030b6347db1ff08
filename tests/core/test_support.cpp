#include "test_support.h"

#include "export/pt_export.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <iostream>

namespace torchscope::test {

std::string fixture(const std::string& name)
{
    return std::string(TORCHSCOPE_FIXTURES_DIR) + "/" + name;
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

::testing::AssertionResult tensorsClose(
    const std::string& label, const at::Tensor& actual, const at::Tensor& expected, double tolerance)
{
    if (actual.sizes() != expected.sizes())
        return ::testing::AssertionFailure()
            << label << ": shape " << actual.sizes() << " != expected " << expected.sizes();
    const double diff = (actual.cpu().to(at::kDouble) - expected.to(at::kDouble)).abs().max().item<double>();
    std::cout << "  " << label << " " << actual.sizes() << " max abs diff " << diff << '\n';
    if (!(diff <= tolerance)) // a NaN anywhere fails too
        return ::testing::AssertionFailure() << label << ": max abs diff " << diff << " > " << tolerance;
    return ::testing::AssertionSuccess();
}

} // namespace torchscope::test
