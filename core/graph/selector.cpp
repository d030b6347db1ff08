#include "graph/selector.h"

#include "common/error.h"
#include "common/strings.h"
#include "model/model.h"

#include <fnmatch.h>

namespace torchscope {

void requireModulePath(const Model& model, const std::string& path, const std::string& what)
{
    if (!path.empty() && model.find(path))
        return;
    const auto closest = closestMatches(path, model.paths(), 3);
    throw Error(what + ": the model has no module '" + path + "'"
        + (closest.empty() ? std::string{} : "; closest paths: " + join(closest, ", ")));
}

std::vector<std::string> resolveSelector(const Model& model, const std::string& selector)
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
        return paths;
    }
    if (selector.find_first_of("*?[") != std::string::npos) {
        for (const auto& m : model.modules())
            if (!m.path.empty() && fnmatch(selector.c_str(), m.path.c_str(), 0) == 0)
                paths.push_back(m.path);
        if (paths.empty())
            throw Error("the pattern '" + selector + "' matches no module path");
        return paths;
    }
    requireModulePath(model, selector, "'" + selector + "'");
    return {selector};
}

} // namespace torchscope
