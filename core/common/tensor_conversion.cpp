#include "common/tensor_conversion.h"

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

std::vector<double> toDoubles(const at::Tensor& tensor)
{
    const at::Tensor cpu = tensor.detach().to(at::kCPU, at::kDouble).contiguous();
    return std::vector<double>(cpu.data_ptr<double>(), cpu.data_ptr<double>() + cpu.numel());
}

} // namespace torchscope
