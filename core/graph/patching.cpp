#include "graph/patching.h"

#include "common/error.h"
#include "common/strings.h"

#include <ATen/ATen.h>

namespace torchscope {
namespace {

Request withLayer(const std::vector<GrabSpec>& grabs, const std::string& layer, const std::vector<EditSpec>& edits)
{
    for (const auto& edit : edits)
        if (edit.kind == EditKind::Add || edit.kind == EditKind::Replace)
            throw Error(
                "patching keeps zero and scale edits only; '" + edit.toString() + "' needs a tensor of its own");
    Request request;
    request.edits = edits;
    request.grabs = grabs;
    request.grabOutput(layer);
    return request;
}

} // namespace

PatchRuns patchActivation(Engine& engine, const std::vector<c10::IValue>& inputA,
    const std::vector<c10::IValue>& inputB, const std::string& layer, const std::vector<GrabSpec>& grabs,
    const std::vector<EditSpec>& edits)
{
    const Request plain = withLayer(grabs, layer, edits);
    PatchRuns runs;
    runs.a = engine.run(plain, inputA);
    runs.b = engine.run(plain, inputB);
    const at::Tensor fromB = runs.b.tensor(layer);
    const at::Tensor ofA = runs.a.tensor(layer);
    if (fromB.sizes() != ofA.sizes())
        throw Error("cannot patch '" + layer + "': its output is " + shapeToString(ofA.sizes().vec()) + " for A but "
            + shapeToString(fromB.sizes().vec()) + " for B; give images of the same size");
    Request patched = plain;
    patched.edits.push_back(EditSpec::make(layer, EditKind::Replace));
    runs.patched = engine.run(patched, inputA, {fromB});
    return runs;
}

AblationRuns ablateChannels(Engine& engine, const std::vector<c10::IValue>& input, const std::string& layer,
    const std::vector<int64_t>& channels, const std::vector<GrabSpec>& grabs, const std::vector<EditSpec>& edits)
{
    if (channels.empty())
        throw Error("choose at least one channel of '" + layer + "' to ablate");
    const Request plain = withLayer(grabs, layer, edits);
    AblationRuns runs;
    runs.original = engine.run(plain, input);
    const at::Tensor map = runs.original.tensor(layer);
    for (int64_t c : channels)
        if (map.dim() < 2 || c < 0 || c >= map.size(1))
            throw Error("'" + layer + "' has " + std::to_string(map.dim() < 2 ? 0 : map.size(1)) + " channels; channel "
                + std::to_string(c) + " does not exist");
    Request ablated = plain;
    ablated.edits.push_back(EditSpec::make(layer, EditKind::ZeroChannels, channels));
    runs.ablated = engine.run(ablated, input);
    return runs;
}

} // namespace torchscope
