#include "compare/comparison.h"

#include "common/error.h"
#include "common/strings.h"
#include "common/tensor_conversion.h"

namespace torchscope {
namespace {

bool isDtype(const std::string& name)
{
    try {
        scalarTypeNamed(name); // the one list of dtype names
        return true;
    } catch (const Error&) {
        return false;
    }
}

} // namespace

Precision Precision::parse(const std::string& text)
{
    const auto parts = split(text, ':');
    Precision p;
    p.dtype = parts.back();
    if (parts.size() == 2)
        p.device = parts[0];
    else if (parts.size() == 3)
        p.device = parts[0] + ":" + parts[1];
    else if (parts.size() != 1)
        p.device = "?";
    const bool deviceKnown = p.device == "cpu" || p.device == "cuda"
        || (p.device.rfind("cuda:", 0) == 0 && p.device.size() > 5
            && p.device.find_first_not_of("0123456789", 5) == std::string::npos);
    if (!deviceKnown || !isDtype(p.dtype))
        throw Error("unknown precision '" + text
            + "'; expected [DEVICE:]DTYPE with DEVICE cpu, cuda or cuda:N and DTYPE float64, float32, bfloat16 or "
              "float16 (e.g. bfloat16, cuda:float16)");
    return p;
}

std::string Precision::name() const
{
    return device + " " + dtype;
}

double CompareConfig::effectiveThreshold() const
{
    if (threshold)
        return *threshold;
    return mode == CompareMode::Precision ? 1e-3 : 0.99;
}

std::vector<Precision> defaultPrecisions(bool cudaAvailable)
{
    std::vector<Precision> precisions{{"cpu", "float32"}, {"cpu", "bfloat16"}};
    if (cudaAvailable)
        for (const char* dtype : {"float32", "float16", "bfloat16"})
            precisions.push_back({"cuda", dtype});
    return precisions;
}

std::string modeName(CompareMode mode)
{
    switch (mode) {
    case CompareMode::Cka:
        return "cka";
    case CompareMode::Checkpoints:
        return "checkpoints";
    case CompareMode::Precision:
        return "precision";
    }
    return "cka";
}

CompareMode parseCompareMode(const std::string& name)
{
    for (CompareMode mode : {CompareMode::Cka, CompareMode::Checkpoints, CompareMode::Precision})
        if (modeName(mode) == name)
            return mode;
    throw Error("unknown comparison '" + name + "'; expected cka, checkpoints or precision");
}

} // namespace torchscope
