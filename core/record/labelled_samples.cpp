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
    const auto field = [&](const char* name, const char* wanted) {
        return Error(
            "'" + path + "': \"" + name + "\" must be " + wanted + ", not " + dict.at(name).type()->annotation_str());
    };
    if (!dict.at("samples").isTensor())
        throw field("samples", "a tensor [N, ...]");
    out.samples = dict.at("samples").toTensor();
    if (dict.contains("labels")) {
        if (!dict.at("labels").isTensor() || dict.at("labels").toTensor().is_floating_point()
            || dict.at("labels").toTensor().dim() != 1)
            throw field("labels", "a tensor of integer labels [N]");
        const at::Tensor labels = dict.at("labels").toTensor().to(at::kLong).contiguous();
        out.labels.assign(labels.data_ptr<int64_t>(), labels.data_ptr<int64_t>() + labels.numel());
    }
    if (dict.contains("classes")) {
        if (!dict.at("classes").isList())
            throw field("classes", "a list of class names");
        for (const auto& c : dict.at("classes").toListRef()) {
            if (!c.isString())
                throw field("classes", "a list of class names (strings)");
            out.classes.push_back(c.toStringRef());
        }
    }
    return out;
}

} // namespace torchscope
