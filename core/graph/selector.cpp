#include "graph/selector.h"

#include "common/error.h"
#include "common/strings.h"
#include "model/model.h"

#include <fnmatch.h>

namespace torchscope {
namespace {

// Keeps the modules that run; names the others in a note.
std::vector<std::string> keepCalled(const Model& model, const std::string& selector,
    const std::vector<std::string>& matched, std::vector<std::string>* notes)
{
    std::vector<std::string> called, skipped;
    for (const auto& path : matched)
        (model.find(path)->called ? called : skipped).push_back(path);
    if (called.empty())
        throw Error("'" + selector + "' matches only modules whose forward never runs: " + join(skipped, ", ") + " ("
            + model.find(skipped.front())->notCalledReason + ")");
    if (!skipped.empty() && notes) {
        std::vector<std::string> shown(skipped.begin(), skipped.begin() + std::min<size_t>(skipped.size(), 5));
        notes->push_back("'" + selector + "' skips " + std::to_string(skipped.size())
            + " module(s) whose forward never runs: " + join(shown, ", ") + (skipped.size() > 5 ? ", ..." : ""));
    }
    return called;
}

} // namespace

void requireModulePath(const Model& model, const std::string& path, const std::string& what)
{
    if (!path.empty() && model.find(path))
        return;
    if (!model.frozenNote().empty())
        throw Error(what + ": the model has no module '" + path + "': " + model.frozenNote());
    const auto closest = closestMatches(path, model.paths(), 3);
    throw Error(what + ": the model has no module '" + path + "'"
        + (closest.empty() ? std::string{} : "; closest paths: " + join(closest, ", ")));
}

void requireCalledModule(const Model& model, const std::string& path, const std::string& what)
{
    requireModulePath(model, path, what);
    const ModuleInfo* module = model.find(path);
    if (!module->called)
        throw Error(what + ": module '" + path + "' never runs in this model: " + module->notCalledReason);
}

std::vector<std::string> resolveSelector(
    const Model& model, const std::string& selector, std::vector<std::string>* notes)
{
    std::vector<std::string> paths;
    if (startsWith(selector, "type:")) {
        const std::string type = selector.substr(5);
        std::vector<std::string> knownTypes;
        for (const auto& m : model.modules()) {
            if (!m.path.empty() && (m.shortType == type || m.qualifiedType == type))
                paths.push_back(m.path);
            knownTypes.push_back(m.shortType);
        }
        if (paths.empty()) {
            const auto closest = closestMatches(type, knownTypes, 3);
            throw Error("'" + selector + "' matches no module; closest types: " + join(closest, ", "));
        }
        return keepCalled(model, selector, paths, notes);
    }
    if (selector.find_first_of("*?[") != std::string::npos) {
        for (const auto& m : model.modules())
            if (!m.path.empty() && fnmatch(selector.c_str(), m.path.c_str(), 0) == 0)
                paths.push_back(m.path);
        if (paths.empty())
            throw Error("the pattern '" + selector + "' matches no module path"
                + (model.frozenNote().empty() ? std::string() : ": " + model.frozenNote()));
        return keepCalled(model, selector, paths, notes);
    }
    requireCalledModule(model, selector, "'" + selector + "'");
    return {selector};
}

} // namespace torchscope
