#include "probe/model_extender.h"

#include "common/error.h"
#include "common/strings.h"
#include "graph/selector.h"
#include "model/model.h"
#include "probe/linear_probe.h"

#include <torch/script.h>

#include <algorithm>

namespace torchscope {
namespace {

bool isAncestor(const std::string& ancestor, const std::string& path)
{
    return ancestor.empty() || startsWith(path, ancestor + ".");
}

bool hasEveryGrab(const RunResult& result, const std::vector<std::string>& paths)
{
    return std::all_of(paths.begin(), paths.end(), [&](const std::string& p) { return result.find(p) != nullptr; });
}

} // namespace

at::Tensor lastCallOutput(const RunResult& result, const std::string& path)
{
    const c10::IValue* last = nullptr;
    for (const auto& [key, value] : result.values)
        if (const CaptureKey capture = CaptureKey::parse(key);
            capture.path == path && capture.kind == CaptureKind::Output)
            last = &value;
    if (!last)
        throw Error("'" + path + "' was not reached in this run, so its extensions have nothing to read");
    if (!last->isTensor())
        throw Error("'" + path + "' returns a " + last->type()->annotation_str()
            + ", not a tensor: extensions read tensor outputs");
    return last->toTensor();
}

at::Tensor runExtension(torch::jit::Module& extension, const std::string& name, const at::Tensor& input)
{
    torch::NoGradGuard noGrad;
    c10::IValue value;
    try {
        value = extension.forward({input});
    } catch (const c10::Error& e) {
        throw Error("extension '" + name + "' failed on its layer's output " + shapeToString(input.sizes().vec()) + ": "
            + torchErrorMessage(e.what_without_backtrace()));
    } catch (const std::exception& e) {
        throw Error("extension '" + name + "' failed on its layer's output " + shapeToString(input.sizes().vec()) + ": "
            + torchErrorMessage(e.what()));
    }
    if (!value.isTensor())
        throw Error("extension '" + name + "' returned a " + value.type()->annotation_str()
            + "; extensions must return a tensor");
    return value.toTensor();
}

std::optional<std::string> lastModuleOf(const Model& model, const std::vector<std::string>& paths)
{
    std::optional<std::string> last;
    std::ptrdiff_t lastIndex = -1;
    for (const auto& path : paths) {
        if (path.empty())
            return std::nullopt; // the root: nothing to cut
        const ModuleInfo* module = model.find(path);
        const std::ptrdiff_t index = module ? module - model.modules().data() : -1;
        if (!last || index > lastIndex) {
            last = path;
            lastIndex = index;
        }
    }
    // named_modules() lists a parent before its children, but the parent's call ends after theirs.
    for (const auto& path : paths)
        if (last && isAncestor(path, *last) && path.size() < last->size())
            last = path;
    return last;
}

RunResult runStump(Engine& engine, Request request, const std::vector<std::string>& paths,
    const std::vector<c10::IValue>& inputs, const std::vector<at::Tensor>& editTensors,
    std::optional<std::optional<std::string>>& cut)
{
    for (const auto& path : paths)
        request.grabOutput(path);
    if (request.truncateAt)
        return engine.run(request, inputs, editTensors);
    if (!cut) {
        // First run: try the cut the tree suggests and keep it if it loses nothing.
        const auto candidate = lastModuleOf(engine.model(), paths);
        if (candidate) {
            request.truncateAt = candidate;
            try {
                RunResult result = engine.run(request, inputs, editTensors);
                if (hasEveryGrab(result, paths)) {
                    cut = candidate;
                    return result;
                }
            } catch (const Error&) {
                // A cut the graph does not allow (inside a loop): run the whole forward instead.
            }
        }
        cut = std::optional<std::string>{};
    }
    request.truncateAt = *cut;
    return engine.run(request, inputs, editTensors);
}

ModelExtender::ModelExtender(std::shared_ptr<Model> model)
    : model_(model)
    , engine_(std::move(model))
{ }

ModelExtender::~ModelExtender() = default;

void ModelExtender::registerExtension(
    const std::string& modulePath, const std::string& name, std::shared_ptr<torch::jit::Module> extension)
{
    if (name.empty())
        throw Error("an extension needs a name");
    if (!extension)
        throw Error("extension '" + name + "' has no module");
    for (const auto& r : registrations_)
        if (r.name == name)
            throw Error("an extension named '" + name + "' is already registered (on '" + r.path
                + "'); names are unique across all layers: unregister it first or choose another name");
    requireCalledModule(*model_, modulePath, "extension '" + name + "'");
    extension->to(c10::Device(model_->device()));
    registrations_.push_back({modulePath, name, std::move(extension)});
    stumpEnd_.reset();
}

void ModelExtender::registerProbe(const std::string& name, const ProbeExtension& probe, const std::string& modulePath)
{
    const std::string path = modulePath.empty() ? probe.layer : modulePath;
    if (path.empty())
        throw Error("probe '" + name + "' does not say which layer it reads: give the module path");
    registerExtension(path, name, probe.module);
}

void ModelExtender::unregisterExtension(const std::string& name)
{
    const auto it
        = std::find_if(registrations_.begin(), registrations_.end(), [&](const auto& r) { return r.name == name; });
    if (it == registrations_.end()) {
        std::vector<std::string> names;
        for (const auto& r : registrations_)
            names.push_back("'" + r.name + "'");
        throw Error("no extension named '" + name + "' is registered"
            + (names.empty() ? std::string(" (there are none)") : "; registered: " + join(names, ", ")));
    }
    registrations_.erase(it);
    stumpEnd_.reset();
}

std::map<std::string, std::vector<std::string>> ModelExtender::nameRegistrations() const
{
    std::map<std::string, std::vector<std::string>> names;
    for (const auto& r : registrations_)
        names[r.path].push_back(r.name);
    return names;
}

std::map<std::string, std::map<std::string, std::shared_ptr<torch::jit::Module>>> ModelExtender::extensions() const
{
    std::map<std::string, std::map<std::string, std::shared_ptr<torch::jit::Module>>> modules;
    for (const auto& r : registrations_)
        modules[r.path][r.name] = r.module;
    return modules;
}

std::vector<std::string> ModelExtender::registeredPaths() const
{
    std::vector<std::string> paths;
    for (const auto& r : registrations_)
        if (std::find(paths.begin(), paths.end(), r.path) == paths.end())
            paths.push_back(r.path);
    return paths;
}

std::optional<std::string> ModelExtender::stumpEnd()
{
    return stumpEnd_ ? *stumpEnd_ : lastModuleOf(*model_, registeredPaths());
}

ExtendedOutput ModelExtender::forward(const std::vector<c10::IValue>& inputs, bool returnOrigOut,
    const Request& request, const std::vector<at::Tensor>& editTensors)
{
    const std::vector<std::string> paths = registeredPaths();
    ExtendedOutput out;
    if (returnOrigOut || paths.empty()) {
        Request withExtensions = request;
        for (const auto& path : paths)
            withExtensions.grabOutput(path);
        out.run = engine_.run(withExtensions, inputs, editTensors);
        if (returnOrigOut)
            out.main = out.run.values.front().second;
    } else {
        out.run = runStump(engine_, request, paths, inputs, editTensors, stumpEnd_);
    }
    for (const auto& r : registrations_)
        out.extensions[r.name] = runExtension(*r.module, r.name, lastCallOutput(out.run, r.path));
    return out;
}

} // namespace torchscope
