#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace torchscope {

// torch.utils._pytree's serialized TreeSpec, as a .pt2 stores a forward's in_spec and out_spec:
// how the flat list of inputs or outputs nests in tuples, lists, dicts and namedtuples.
struct TreeSpec {
    std::string type; // "" for a leaf, else "builtins.tuple", "builtins.dict", "collections.namedtuple", ...
    nlohmann::json context; // dict keys, a namedtuple's class name; decoded from its JSON string
    std::vector<TreeSpec> children;

    bool isLeaf() const { return type.empty(); }
    size_t leafCount() const;
};

// Throws torchscope::Error when the text is no serialized TreeSpec (or one of an unknown version).
TreeSpec parseTreeSpec(const std::string& serialized);

} // namespace torchscope
