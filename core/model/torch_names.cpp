#include "model/torch_names.h"

#include "common/strings.h"

#include <algorithm>
#include <cctype>

namespace torchscope {

std::string readableTypeName(const c10::TypePtr& type)
{
    const auto classType = type->cast<c10::ClassType>();
    if (!classType || !classType->name())
        return type->annotation_str();
    std::vector<std::string> kept;
    for (const auto& part : split(classType->name()->qualifiedName(), '.'))
        if (part != "__torch__" && !startsWith(part, "___torch_mangle_"))
            kept.push_back(part);
    return join(kept, ".");
}

bool isModuleType(const c10::TypePtr& type)
{
    const auto classType = type->cast<c10::ClassType>();
    return classType && classType->is_module();
}

bool isModuleValue(const torch::jit::Value* value)
{
    if (isModuleType(value->type()))
        return true;
    const auto interface = value->type()->cast<c10::InterfaceType>();
    return interface && interface->is_module();
}

bool isForwardMethodName(const std::string& name)
{
    if (!startsWith(name, "forward"))
        return false;
    std::string_view rest(name);
    rest.remove_prefix(7);
    if (startsWith(rest, "__"))
        rest.remove_prefix(2);
    else if (rest.empty())
        return true;
    return !rest.empty() && std::all_of(rest.begin(), rest.end(), [](char c) { return std::isdigit(c); });
}

std::string joinPath(const std::string& base, const std::string& name)
{
    return base.empty() ? name : base + "." + name;
}

std::string parentPath(const std::string& path)
{
    const auto dot = path.rfind('.');
    return dot == std::string::npos ? "" : path.substr(0, dot);
}

void forEachNode(torch::jit::Block* block, const std::function<void(torch::jit::Node*)>& visit)
{
    for (auto* node : block->nodes()) {
        visit(node);
        for (auto* sub : node->blocks())
            forEachNode(sub, visit);
    }
}

std::unordered_map<const torch::jit::Value*, std::string> modulePaths(torch::jit::Graph& graph)
{
    std::unordered_map<const torch::jit::Value*, std::string> paths{{graph.inputs()[0], ""}};
    forEachNode(graph.block(), [&](torch::jit::Node* node) {
        if (node->kind() == c10::prim::GetAttr && isModuleValue(node->output())) {
            const auto it = paths.find(node->input(0));
            if (it != paths.end())
                paths[node->output()] = joinPath(it->second, node->s(c10::attr::name));
        }
    });
    return paths;
}

int sourceLine(const torch::jit::Node* node)
{
    const auto& range = node->sourceRange();
    const auto source = range.source();
    if (!source)
        return 0;
    return static_cast<int>(source->starting_line_no() + source->lineno_for_offset(range.start())) + 1;
}

} // namespace torchscope

namespace torchscope {

std::string sourceLocation(const torch::jit::Node* node)
{
    if (const auto location = node->sourceRange().file_line_col())
        return std::get<0>(*location) + ":" + std::to_string(std::get<1>(*location));
    const int line = sourceLine(node);
    return line ? "line " + std::to_string(line) : std::string{};
}

} // namespace torchscope
