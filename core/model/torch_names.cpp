#include "model/torch_names.h"

#include "common/strings.h"

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

std::string joinPath(const std::string& base, const std::string& name)
{
    return base.empty() ? name : base + "." + name;
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
