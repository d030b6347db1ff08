#include "probe/linear_probe.h"

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/strings.h"
#include "export/pt_export.h"
#include "model/file_diagnosis.h"
#include "model/torchscript_load.h"

#include <nlohmann/json.hpp>
#include <torch/script.h>

namespace torchscope {
namespace {

constexpr const char* kMetadataFile = "torchscope_probe.json";

std::string forwardSource(ProbePooling pooling)
{
    const std::string pool = pooling == ProbePooling::Average ? "x = x.flatten(2).mean(2)" : "x = x.flatten(1)";
    return R"(
def forward(self, activations: Tensor) -> Tensor:
    x = activations.float()
    if x.dim() > 2:
        )"
        + pool + R"(
    x = (x - self.feature_mean) / self.feature_std
    return torch.addmm(self.bias, x, self.weight.t())
)";
}

nlohmann::json metadataOf(const LinearProbe& probe)
{
    return {{"layer", probe.layer}, {"pooling", toString(probe.pooling)}, {"classes", probe.classNames},
        {"train_accuracy", probe.training.trainAccuracy}, {"validation_accuracy", probe.training.validationAccuracy}};
}

LinearProbe probeFromTensors(const std::string& layer, const std::string& pooling,
    const std::vector<std::string>& classes, const at::Tensor& weight, const at::Tensor& bias, const at::Tensor& mean,
    const at::Tensor& std)
{
    LinearProbe probe;
    probe.layer = layer;
    probe.pooling = parseProbePooling(pooling);
    probe.classNames = classes;
    probe.training.weight = weight.to(at::kCPU, at::kFloat);
    probe.training.bias = bias.to(at::kCPU, at::kFloat);
    probe.training.featureMean = mean.to(at::kCPU, at::kFloat);
    probe.training.featureStd = std.to(at::kCPU, at::kFloat);
    probe.training.classes = weight.size(0) == 1 ? 2 : weight.size(0);
    if (weight.dim() != 2 || bias.numel() != weight.size(0) || mean.numel() != weight.size(1)
        || std.numel() != weight.size(1))
        throw Error("the probe's tensors do not fit together: weight " + shapeToString(weight.sizes().vec()) + ", bias "
            + shapeToString(bias.sizes().vec()) + ", feature_mean " + shapeToString(mean.sizes().vec()));
    return probe;
}

LinearProbe probeFromStateDict(const std::string& path, const c10::IValue& saved)
{
    if (!saved.isGenericDict())
        throw Error("'" + path + "' was written by torch.save but holds no probe state dict (a dict with weight, "
            + "bias, feature_mean and feature_std); it holds a " + saved.type()->annotation_str());
    const auto dict = saved.toGenericDict();
    for (const char* key : {"weight", "bias", "feature_mean", "feature_std"})
        if (!dict.contains(key) || !dict.at(key).isTensor())
            throw Error("'" + path + "' is a dict but not a probe state dict: it has no tensor '" + key + "'");
    std::vector<std::string> classes;
    if (dict.contains("classes") && dict.at("classes").isList())
        for (const auto& c : dict.at("classes").toListRef())
            classes.push_back(c.toStringRef());
    const std::string layer = dict.contains("layer") ? dict.at("layer").toStringRef() : "";
    const std::string pooling = dict.contains("pooling") ? dict.at("pooling").toStringRef() : "avg";
    return probeFromTensors(layer, pooling, classes, dict.at("weight").toTensor(), dict.at("bias").toTensor(),
        dict.at("feature_mean").toTensor(), dict.at("feature_std").toTensor());
}

c10::IValue readStateDictFile(const std::string& path, const std::string& problem)
{
    try {
        return readTorchSaveFile(path);
    } catch (const Error&) {
        throw Error("'" + path + "' is not a probe: " + problem);
    }
}

} // namespace

ProbeExtension toExtension(const LinearProbe& probe)
{
    const auto& t = probe.training;
    if (!t.weight.defined())
        throw Error("the probe has no weights: train it first");
    auto module = std::make_shared<torch::jit::Module>("__torch__.torchscope.LinearProbe");
    module->register_parameter("weight", t.weight.detach().cpu().contiguous(), false);
    module->register_parameter("bias", t.bias.detach().cpu().contiguous(), false);
    module->register_buffer("feature_mean", t.featureMean.detach().cpu().contiguous());
    module->register_buffer("feature_std", t.featureStd.detach().cpu().contiguous());
    module->define(forwardSource(probe.pooling));
    module->eval();
    return {probe.layer, probe.classNames, module, toString(probe.pooling)};
}

void saveProbeModule(const std::string& path, const LinearProbe& probe)
{
    const ProbeExtension extension = toExtension(probe);
    const torch::jit::ExtraFilesMap extra{{kMetadataFile, metadataOf(probe).dump(2)}};
    replaceFileAtomically(path, [&](const std::string& temporary) {
        try {
            extension.module->save(temporary, extra);
        } catch (const c10::Error& e) {
            throw Error("cannot write the probe to '" + path + "': " + e.what_without_backtrace());
        }
    });
}

void saveProbeStateDict(const std::string& path, const LinearProbe& probe)
{
    const auto& t = probe.training;
    c10::List<std::string> classes;
    for (const auto& c : probe.classNames)
        classes.push_back(c);
    writePtDictionary(path,
        {{"weight", t.weight}, {"bias", t.bias}, {"feature_mean", t.featureMean}, {"feature_std", t.featureStd},
            {"layer", probe.layer}, {"pooling", toString(probe.pooling)}, {"classes", classes}});
}

ProbeExtension loadProbeExtension(const std::string& path)
{
    if (const auto problem = diagnoseModelFile(path)) // not TorchScript: a state dict written by torch.save?
        return toExtension(probeFromStateDict(path, readStateDictFile(path, *problem)));
    torch::jit::ExtraFilesMap extra{{kMetadataFile, ""}};
    ProbeExtension extension;
    try {
        extension.module = std::make_shared<torch::jit::Module>(loadTorchScript(path, c10::kCPU, extra));
    } catch (const c10::Error& e) {
        throw Error("cannot load the probe '" + path + "': " + e.what_without_backtrace());
    } catch (const std::exception& e) {
        // Code that does not compile (torch::jit::ErrorReport) or a damaged archive LibTorch reports otherwise.
        throw Error("cannot load the probe '" + path + "': " + e.what());
    }
    extension.module->eval();
    if (!extra[kMetadataFile].empty()) {
        const auto metadata = nlohmann::json::parse(extra[kMetadataFile], nullptr, false);
        if (metadata.is_object()) {
            extension.layer = metadata.value("layer", "");
            extension.classNames = metadata.value("classes", std::vector<std::string>{});
            extension.pooling = metadata.value("pooling", "");
        }
    }
    return extension;
}

std::vector<double> probeProbabilities(const at::Tensor& scores)
{
    const at::Tensor s = scores.detach().to(at::kCPU, at::kDouble).flatten();
    const at::Tensor p = s.numel() == 1 ? at::cat({1 - s.sigmoid(), s.sigmoid()}) : s.softmax(0);
    return {p.data_ptr<double>(), p.data_ptr<double>() + p.numel()};
}

LinearProbe loadLinearProbe(const std::string& path)
{
    if (const auto problem = diagnoseModelFile(path))
        return probeFromStateDict(path, readStateDictFile(path, *problem));
    const ProbeExtension extension = loadProbeExtension(path);
    for (const char* name : {"weight", "bias", "feature_mean", "feature_std"})
        if (!extension.module->hasattr(name) || !extension.module->attr(name).isTensor())
            throw Error("'" + path
                + "' is a TorchScript module but not a linear probe TorchScope wrote: it has no tensor '" + name
                + "' (a probe's weights are read from its weight, bias, feature_mean and feature_std)");
    const auto& m = *extension.module;
    return probeFromTensors(extension.layer, extension.pooling.empty() ? "avg" : extension.pooling,
        extension.classNames, m.attr("weight").toTensor(), m.attr("bias").toTensor(), m.attr("feature_mean").toTensor(),
        m.attr("feature_std").toTensor());
}

} // namespace torchscope
