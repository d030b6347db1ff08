#pragma once

#include "graph/engine.h"

#include <string>
#include <vector>

namespace torchscope {

// Activation patching (nethook's edit_output with another input's activation): run A and B, then
// A again with `layer`'s output replaced by B's. Every run grabs `grabs` (later layers' maps) so
// the three can be shown side by side. `edits` (zero, scale) are in force in every run.
struct PatchRuns {
    RunResult a, b, patched;
};
PatchRuns patchActivation(Engine& engine, const std::vector<c10::IValue>& inputA,
    const std::vector<c10::IValue>& inputB, const std::string& layer, const std::vector<GrabSpec>& grabs = {},
    const std::vector<EditSpec>& edits = {});

// Ablation: the run of `input` with the channels of `layer` set to zero, beside the plain run.
struct AblationRuns {
    RunResult original, ablated;
};
AblationRuns ablateChannels(Engine& engine, const std::vector<c10::IValue>& input, const std::string& layer,
    const std::vector<int64_t>& channels, const std::vector<GrabSpec>& grabs = {},
    const std::vector<EditSpec>& edits = {});

} // namespace torchscope
