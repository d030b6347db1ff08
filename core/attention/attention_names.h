#pragma once

// The attention maps' methods and rollout's head fusions by name, in one place: the CLI's choices,
// the Attention tab's lists and the table of analyses read these. Torch-free.

#include <string>
#include <vector>

namespace torchscope {

inline constexpr const char* AttentionHeads = "heads";
inline constexpr const char* AttentionRollout = "rollout";
inline constexpr const char* AttentionLeGrad = "legrad";
// Every method, and rollout's head fusions, by name: the CLI's choices and the table of analyses.
inline const std::vector<std::string>& attentionMethods()
{
    static const std::vector<std::string> methods{AttentionHeads, AttentionRollout, AttentionLeGrad};
    return methods;
}
inline const std::vector<std::string>& headFusions()
{
    static const std::vector<std::string> fusions{"mean", "max", "min"};
    return fusions;
}

} // namespace torchscope
