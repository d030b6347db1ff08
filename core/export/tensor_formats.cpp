#include "export/tensor_formats.h"

#include "common/strings.h"

namespace torchscope {

const std::vector<TensorFormatInfo>& tensorFormats()
{
    static const std::vector<TensorFormatInfo> formats{
        {"PyTorch", ".pt", "one dictionary; Python: torch.load(path)"},
        {"NumPy", ".npz", "one array per key; Python: numpy.load(path)"},
        {"safetensors", ".safetensors", "Python: safetensors.torch.load_file(path)"},
    };
    return formats;
}

const TensorFormatInfo* tensorFormatForPath(const std::string& path)
{
    for (const auto& format : tensorFormats())
        if (endsWith(path, format.extension))
            return &format;
    return nullptr;
}

} // namespace torchscope
