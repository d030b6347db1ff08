#include "model/call_graph.h"

#include "common/strings.h"
#include "model/torch_names.h"

#include <torch/script.h>

#include <functional>
#include <utility>

namespace torchscope {

namespace {

// A call with no argument but the module and no value back (NoneType): what a trace keeps of a
// module that passes its input through.
bool isEmptyCall(const torch::jit::Node* node)
{
    return node->inputs().size() == 1 && node->outputs().size() == 1
        && node->output()->type()->kind() == c10::TypeKind::NoneType;
}

} // namespace

CallGraph traceCalls(const torch::jit::Module& root)
{
    std::map<std::string, torch::jit::Module> modules;
    for (const auto& named : root.named_modules())
        modules.emplace(named.name, named.value);

    CallGraph result;
    std::set<std::pair<std::string, std::string>> visited;
    std::vector<std::pair<std::string, std::string>> pending{{"", "forward"}};
    while (!pending.empty()) {
        // Plain variables, not a structured binding: the lambda below captures them (C++17).
        const std::string path = pending.back().first;
        const std::string methodName = pending.back().second;
        pending.pop_back();
        if (!visited.insert({path, methodName}).second)
            continue;
        const auto module = modules.find(path);
        if (module == modules.end())
            continue;
        const auto method = module->second.find_method(methodName);
        auto* function = method ? torch::jit::tryToGraphFunction(method->function()) : nullptr;
        if (!function)
            continue;
        const auto graph = function->graph();
        const auto relative = modulePaths(*graph);
        std::function<void(torch::jit::Block*, const std::string&)> walk
            = [&](torch::jit::Block* block, const std::string& context) {
                  for (auto* node : block->nodes()) {
                      if (node->kind() == c10::prim::CallMethod) {
                          const auto it = relative.find(node->input(0));
                          if (it != relative.end()) {
                              const std::string callee = it->second.empty() ? path : joinPath(path, it->second);
                              const std::string name = node->s(c10::attr::name);
                              if (!it->second.empty() && isForwardMethodName(name)) {
                                  if (isEmptyCall(node))
                                      result.emptyCalls.insert(callee);
                                  else
                                      result.callSites[callee].push_back({methodName, sourceLine(node), context});
                              }
                              pending.emplace_back(callee, name);
                          }
                      } else if (node->kind() == c10::prim::GetAttr && !isModuleValue(node->output())) {
                          const auto it = relative.find(node->input(0));
                          if (it != relative.end() && !it->second.empty())
                              result.attributesRead.insert(joinPath(path, it->second));
                      }
                      const char* inner = node->kind() == c10::prim::If ? "inside an if-branch"
                          : node->kind() == c10::prim::Loop             ? "inside a loop"
                                                                        : nullptr;
                      for (auto* sub : node->blocks())
                          walk(sub, inner ? inner : context);
                  }
              };
        walk(graph->block(), "");
    }
    return result;
}

std::string notCalledReason(const std::string& path, const CallGraph& graph)
{
    if (graph.emptyCalls.count(path)) {
        const std::string parent = parentPath(path).empty()
            ? ""
            : " (its parent '" + parentPath(path) + "' when it is the parent's last step)";
        return "the model calls it without an input and it gives nothing back: torch.jit.trace records a module that "
               "passes its input through (as nn.Identity) that way, so the traced model holds no value to grab here; "
               "grab the layer whose output it passes on"
            + parent + ", or open the scripted model";
    }
    for (const auto& [callee, sites] : graph.callSites)
        if (startsWith(callee, path + "."))
            return "a container: the model calls its children (" + callee
                + " among them) but never the module itself (a ModuleList or ModuleDict is iterated, not called)";
    if (graph.attributesRead.count(path))
        return "its weights are used directly by its parent's code (as in F.linear(x, self." + split(path, '.').back()
            + ".weight)), so its own forward never runs";
    return "the model's forward never uses it (a left-over or unused module)";
}

} // namespace torchscope
