#include "record/labelled_samples.h"

#include "common/error.h"
#include "export/pt_export.h"

#include <ATen/ATen.h>

namespace torchscope {

LabelledSamples readLabelledSamples(const std::string& path)
{
    const c10::IValue saved = readTorchSaveFile(path);
    LabelledSamples out;
    if (saved.isTensor()) {
        out.samples = saved.toTensor();
        return out;
    }
    if (!saved.isGenericDict() || !saved.toGenericDict().contains("samples"))
        throw Error("'" + path
            + "' holds neither a tensor nor a {\"samples\": [N, ...], \"labels\": [N]} dict; it holds a "
            + saved.type()->annotation_str());
    const auto dict = saved.toGenericDict();
    out.samples = dict.at("samples").toTensor();
    if (dict.contains("labels")) {
        const at::Tensor labels = dict.at("labels").toTensor().to(at::kLong).contiguous();
        out.labels.assign(labels.data_ptr<int64_t>(), labels.data_ptr<int64_t>() + labels.numel());
    }
    if (dict.contains("classes") && dict.at("classes").isList())
        for (const auto& c : dict.at("classes").toListRef())
            out.classes.push_back(c.toStringRef());
    return out;
}

} // namespace torchscope
