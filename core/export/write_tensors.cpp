#include "export/write_tensors.h"

#include "common/error.h"
#include "export/array_files.h"
#include "export/pt_export.h"
#include "export/tensor_formats.h"

namespace torchscope {

std::vector<std::string> writeTensors(const std::string& path, const NamedValues& values)
{
    const TensorFormatInfo* format = tensorFormatForPath(path);
    if (!format) {
        std::string known;
        for (const auto& f : tensorFormats())
            known += (known.empty() ? "" : ", ") + f.extension;
        throw Error("cannot write '" + path + "': unknown file type; use one of " + known);
    }
    if (format->extension == ".pt") {
        writePtDictionary(path, values);
        return {};
    }
    NamedTensors tensors;
    std::vector<std::string> skipped;
    for (const auto& [key, value] : values) {
        if (value.isTensor())
            tensors.emplace_back(key, value.toTensor());
        else
            skipped.push_back(key);
    }
    if (format->extension == ".npz")
        writeNpz(path, tensors);
    else
        writeSafetensors(path, tensors);
    return skipped;
}

} // namespace torchscope
