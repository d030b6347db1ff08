#include "common/tensor_conversion.h"

#include "common/error.h"

#include <ATen/ATen.h>

namespace torchscope {

FloatTensor toFloatTensor(const at::Tensor& tensor)
{
    const at::Tensor cpu = tensor.detach().to(at::kCPU, at::kFloat).contiguous();
    FloatTensor out;
    out.shape = cpu.sizes().vec();
    out.values.assign(cpu.data_ptr<float>(), cpu.data_ptr<float>() + cpu.numel());
    return out;
}

at::Tensor toTensor(const FloatTensor& values)
{
    return at::tensor(values.values, at::kFloat).view(values.shape).clone();
}

std::vector<double> toDoubles(const at::Tensor& tensor)
{
    const at::Tensor cpu = tensor.detach().to(at::kCPU, at::kDouble).contiguous();
    return std::vector<double>(cpu.data_ptr<double>(), cpu.data_ptr<double>() + cpu.numel());
}

at::ScalarType scalarTypeNamed(const std::string& name)
{
    if (name == "float64")
        return at::kDouble;
    if (name == "float32")
        return at::kFloat;
    if (name == "bfloat16")
        return at::kBFloat16;
    if (name == "float16")
        return at::kHalf;
    throw Error("unknown dtype '" + name + "'; expected float64, float32, bfloat16 or float16");
}

} // namespace torchscope
