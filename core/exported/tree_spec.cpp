#include "exported/tree_spec.h"

#include "common/error.h"

namespace torchscope {
namespace {

TreeSpec readNode(const nlohmann::json& node)
{
    TreeSpec spec;
    if (!node.is_object() || !node.contains("children_spec"))
        throw Error("a tree spec node is not an object with children_spec: " + node.dump().substr(0, 200));
    if (node.contains("type") && !node.at("type").is_null())
        spec.type = node.at("type").get<std::string>();
    // The context is itself JSON, serialized into a string ("null", "[\"a\", \"b\"]", "\"Point\"").
    if (node.contains("context") && node.at("context").is_string())
        spec.context = nlohmann::json::parse(node.at("context").get<std::string>(), nullptr, false);
    for (const auto& child : node.at("children_spec"))
        spec.children.push_back(readNode(child));
    return spec;
}

} // namespace

size_t TreeSpec::leafCount() const
{
    if (isLeaf())
        return 1;
    size_t count = 0;
    for (const auto& child : children)
        count += child.leafCount();
    return count;
}

TreeSpec parseTreeSpec(const std::string& serialized)
{
    const auto json = nlohmann::json::parse(serialized, nullptr, false);
    if (json.is_discarded() || !json.is_array() || json.size() != 2)
        throw Error(
            "the input/output spec is not a serialized pytree ([version, tree]): '" + serialized.substr(0, 120) + "'");
    if (json[0] != 1)
        throw Error("the input/output spec has pytree protocol " + json[0].dump()
            + "; TorchScope reads protocol 1 (PyTorch 2.x)");
    try {
        return readNode(json[1]);
    } catch (const nlohmann::json::exception& e) {
        throw Error(std::string("the input/output spec is malformed: ") + e.what());
    }
}

} // namespace torchscope
