#include "model/model.h"

#include "common/error.h"
#include "common/strings.h"
#include "common/tensor_conversion.h"
#include "exported/pt2_archive.h"
#include "model/attention_modules.h"
#include "model/call_graph.h"
#include "model/file_diagnosis.h"
#include "model/operator_libraries.h"
#include "model/torch_names.h"
#include "model/torchscript_load.h"
#include "model/traced_rewrites.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/cuda.h>
#include <torch/script.h>
#include <torch/version.h>

#include <functional>
#include <map>

namespace torchscope {
namespace {

// Per TorchScript type: instances of one type share their forward's code.
bool holdsAttention(const torch::jit::Module& module, std::map<std::string, bool>& byType)
{
    const auto name = module.type()->name();
    const std::string key = name ? name->qualifiedName() : "";
    if (const auto it = byType.find(key); !key.empty() && it != byType.end())
        return it->second;
    bool holds = false;
    try {
        holds = computesAttention(module);
    } catch (const std::exception&) {
        holds = false; // code we cannot inline is code whose attention we cannot tap either
    }
    byType[key] = holds;
    return holds;
}

int64_t countParameters(const torch::jit::Module& module, bool recurse)
{
    int64_t count = 0;
    for (const auto& p : module.parameters(recurse))
        count += p.numel();
    return count;
}

// torch.jit.freeze folds submodules and weights into the forward graph as constants: the root
// is all that is left, with no parameters and tensor constants in its graph.
std::string describeFreezing(const torch::jit::Module& module, size_t moduleCount, int64_t parameters)
{
    if (moduleCount != 1 || parameters != 0)
        return {};
    auto* forward = torch::jit::tryToGraphFunction(module.get_method("forward").function());
    if (!forward)
        return {};
    int tensors = 0;
    std::string example;
    forEachNode(forward->graph()->block(), [&](torch::jit::Node* node) {
        if (node->kind() == c10::prim::Constant && node->output()->type()->cast<c10::TensorType>()) {
            ++tensors;
            if (example.empty() && node->output()->hasDebugName())
                example = node->output()->debugName();
        }
    });
    if (tensors == 0)
        return {};
    return "this model was frozen with torch.jit.freeze: its submodules and weights were folded into the "
           "forward graph as "
        + std::to_string(tensors) + " constant tensors" + (example.empty() ? "" : " (such as " + example + ")")
        + ", so it has no layers to grab, edit or truncate at. Running it, its predictions and the input "
          "gradient (saliency) still work. To look inside, open the scripted model from before freezing "
          "(torch.jit.save(torch.jit.script(model), path) without torch.jit.freeze): it keeps its modules";
}

// A module of a .pt2 that no node ran in: export keeps no trace of a module whose forward computes
// nothing (nn.Identity, a Flatten of an already flat tensor) or whose result nothing uses.
std::string notInProgramReason(const std::string& path, const CallGraph& calls, const ExportedProgramInfo& info)
{
    const std::string recognised
        = "export records no module inside a region, so TorchScope recognises a layer there by "
          "its weights, when one operation reads them all (a convolution, linear, "
          "normalisation, embedding or PReLU layer)";
    for (const auto& region : info.regions)
        if (region.modules.count(path))
            return "it runs inside the exported program's control-flow region " + region.node + " in "
                + (region.caller.empty() ? std::string("the program itself") : "'" + region.caller + "'") + ": "
                + recognised + "; grab such a layer inside it, or the module that runs the region";
    const std::string reason = notCalledReason(path, calls);
    if (!startsWith(reason, "the model's forward never uses it"))
        return reason;
    std::string text = "no node of the exported program ran in it: its forward computes nothing export keeps (as "
                       "nn.Identity), its result is never used, or the forward never calls it";
    for (const auto& region : info.regions)
        if (region.caller.empty() || startsWith(path, region.caller + ".")) {
            text += "; or it runs inside the control-flow region " + region.node
                + ", where it cannot be recognised: " + recognised;
            break;
        }
    return text;
}

std::string loadFailure(const std::string& path, const std::string& message)
{
    std::string advice = missingOperatorAdvice(message);
    if (advice.empty() || message.find("Unknown builtin op: aten::") != std::string::npos)
        advice = newerPyTorchAdvice(path, message);
    std::string first = firstLine(message);
    if (first.empty())
        first = message.substr(0, 300);
    return "cannot load TorchScript model '" + path + "': " + (advice.empty() ? first : advice);
}

} // namespace

torch::jit::Module loadTorchScript(const std::string& path, const c10::Device& device, torch::jit::ExtraFilesMap& extra)
{
    return torch::jit::load(path, device, extra, /*load_debug_files=*/false);
}

std::string resolveDevice(const std::string& requested)
{
    if (requested.empty() || requested == "auto")
        return torch::cuda::is_available() ? "cuda" : "cpu";
    if (startsWith(requested, "cuda") && !torch::cuda::is_available()) {
        // libtorch_cuda registers CUDA's device guard when it loads: there is none in a CPU build.
        const bool builtWithCuda = c10::impl::hasDeviceGuardImpl(c10::DeviceType::CUDA);
        throw Error("device '" + requested + "' was asked for, but "
            + (builtWithCuda
                    ? std::string("no CUDA GPU is visible to this process (LibTorch " TORCH_VERSION
                                  " is built with CUDA; check the driver, nvidia-smi and CUDA_VISIBLE_DEVICES)")
                    : std::string("this LibTorch " TORCH_VERSION " is built for the CPU only"))
            + "; use --device cpu or auto");
    }
    try {
        (void)c10::Device(requested);
    } catch (const c10::Error&) {
        throw Error("unknown device '" + requested + "'; use auto, cpu, cuda or cuda:N");
    }
    return requested;
}

std::shared_ptr<Model> Model::load(const std::string& path, const LoadOptions& options)
{
    if (auto problem = diagnoseModelFile(path))
        throw Error("cannot open model '" + path + "': " + *problem);

    for (const auto& library : options.operatorLibraries)
        loadOperatorLibrary(library);
    if (options.loadDefaultOperatorLibraries) {
        for (const auto& library : defaultOperatorLibraries()) {
            try {
                loadOperatorLibrary(library);
            } catch (const Error&) {
                // Optional: a model that needs it gets missingOperatorAdvice() below.
            }
        }
    }

    std::shared_ptr<Model> model(new Model);
    model->path_ = path;
    model->device_ = resolveDevice(options.device);
    torch::jit::ExtraFilesMap extra{{"torchscope.json", ""}};
    if (isPt2Archive(path)) {
        try {
            ExportedProgramInfo info;
            model->module_ = loadExportedProgram(path, model->device_, info);
            model->exported_ = std::move(info);
            // A setup stored by `setup --out` (writeModelWithSetup) sits in the archive's extra/ folder.
            if (const Pt2Archive archive(path); archive.has("extra/torchscope.json"))
                model->extraFiles_["torchscope.json"] = archive.read("extra/torchscope.json");
        } catch (const c10::Error& e) {
            throw Error("cannot open the exported program '" + path + "': " + firstLine(e.what_without_backtrace()));
        } catch (const std::exception& e) {
            throw Error("cannot open the exported program '" + path + "': " + e.what());
        }
        extra.clear();
    } else {
        try {
            model->module_
                = std::make_unique<torch::jit::Module>(loadTorchScript(path, c10::Device(model->device_), extra));
            returnWhatTracedBlocksReturn(*model->module_);
        } catch (const c10::Error& e) {
            throw Error(loadFailure(path, e.what_without_backtrace()));
        } catch (const std::exception& e) {
            // The TorchScript compiler reports unknown ops as torch::jit::ErrorReport.
            throw Error(loadFailure(path, e.what()));
        }
    }
    for (const auto& [name, content] : extra)
        if (!content.empty())
            model->extraFiles_[name] = content;
    model->module_->eval();
    if (!options.dtype.empty()) {
        const at::ScalarType dtype = scalarTypeNamed(options.dtype);
        auto convert = [dtype](at::Tensor tensor) {
            if (tensor.is_floating_point())
                tensor.set_data(tensor.to(dtype));
        };
        // Parameters, buffers and plain tensor attributes alike (named_attributes covers all).
        for (const auto& attribute : model->module_->named_attributes(true))
            if (attribute.value.isTensor())
                convert(attribute.value.toTensor());
    }

    const CallGraph calls = traceCalls(*model->module_);
    std::map<std::string, bool> attentionByType;
    for (const auto& named : model->module_->named_modules()) {
        ModuleInfo info;
        info.path = named.name;
        info.name = split(named.name, '.').back();
        info.qualifiedType = readableTypeName(named.value.type());
        info.shortType = split(info.qualifiedType, '.').back();
        info.ownParameters = countParameters(named.value, false);
        info.totalParameters = countParameters(named.value, true);
        info.holdsAttention = holdsAttention(named.value, attentionByType);
        model->index_[info.path] = static_cast<int>(model->modules_.size());
        model->modules_.push_back(std::move(info));
    }
    for (size_t i = 1; i < model->modules_.size(); ++i) {
        auto& info = model->modules_[i];
        info.parent = model->index_.at(parentPath(info.path));
        model->modules_[static_cast<size_t>(info.parent)].children.push_back(static_cast<int>(i));
        if (const auto it = calls.callSites.find(info.path); it != calls.callSites.end())
            info.callSites = it->second;
        info.called = !info.callSites.empty();
        if (!info.called)
            info.notCalledReason = model->exported_ ? notInProgramReason(info.path, calls, *model->exported_)
                                                    : notCalledReason(info.path, calls);
    }
    model->frozenNote_ = describeFreezing(*model->module_, model->modules_.size(), model->modules_[0].totalParameters);

    const auto& schema = model->module_->get_method("forward").function().getSchema();
    for (size_t i = 1; i < schema.arguments().size(); ++i) {
        const auto& argument = schema.arguments()[i];
        model->arguments_.push_back(
            {argument.name(), argument.type()->annotation_str(), argument.default_value().has_value()});
    }
    return model;
}

Model::~Model() = default;

const ModuleInfo* Model::find(const std::string& path) const
{
    const auto it = index_.find(path);
    return it == index_.end() ? nullptr : &modules_[static_cast<size_t>(it->second)];
}

std::vector<std::string> Model::paths() const
{
    std::vector<std::string> all;
    for (const auto& m : modules_)
        all.push_back(m.path);
    return all;
}

std::string Model::forwardSignature() const
{
    std::vector<std::string> parts;
    for (const auto& a : arguments_)
        parts.push_back(a.name + ": " + a.type + (a.hasDefault ? " = ..." : ""));
    return "forward(" + join(parts, ", ") + ")";
}

std::string Model::format() const
{
    return exported_ ? "torch.export program (.pt2)" : "TorchScript";
}

std::string Model::extraFile(const std::string& name) const
{
    const auto it = extraFiles_.find(name);
    return it == extraFiles_.end() ? std::string{} : it->second;
}

void Model::setOutputShapes(const std::string& path, std::vector<std::vector<int64_t>> shapes)
{
    const auto it = index_.find(path);
    if (it != index_.end())
        modules_[static_cast<size_t>(it->second)].outputShapes = std::move(shapes);
}

} // namespace torchscope
