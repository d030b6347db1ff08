#pragma once

#include <string>
#include <vector>

namespace torchscope {

class Model;

// Resolves a module selector to module paths in named_modules() order:
//   "layer1.0.conv1"  one path (an unknown one throws, naming the closest existing paths; one
//                     whose forward never runs throws, saying why)
//   "layer3.*"        a glob (fnmatch: * also crosses dots, so it takes all descendants)
//   "type:Conv2d"     every module of that short or qualified type
// Globs and types skip modules whose forward never runs and add a note saying which to `notes`.
// A glob or type that matches nothing (or nothing that runs) throws too.
std::vector<std::string> resolveSelector(
    const Model& model, const std::string& selector, std::vector<std::string>* notes = nullptr);

// Throws the "unknown module path" error unless the path exists.
void requireModulePath(const Model& model, const std::string& path, const std::string& what);
// Also throws when the module's forward never runs (nothing to grab, edit or truncate at).
void requireCalledModule(const Model& model, const std::string& path, const std::string& what);

} // namespace torchscope
