#include "patching/patch_images.h"

#include "attribution/grad_cam.h"
#include "common/error.h"
#include "common/tensor_conversion.h"
#include "export/manifest.h"
#include "export/write_tensors.h"
#include "graph/engine.h"
#include "graph/model_output.h"
#include "graph/patching.h"
#include "imaging/image_tensor.h"
#include "preprocess/preprocess_tensor.h"

#include <ATen/ATen.h>

namespace torchscope {
namespace {

// One sample of compareLayer's output as a map: the mean over channels of [C, h, w], patch tokens
// as their grid, anything else as one row.
at::Tensor meanMap(const at::Tensor& output)
{
    at::Tensor m = output.to(at::kCPU, at::kFloat);
    if (const at::Tensor tokens = tokensAsMaps(m); tokens.defined())
        m = tokens;
    return m.dim() == 4 ? m[0].mean(0) : m.reshape({1, -1});
}

struct Run {
    std::string key;
    std::string title;
    const RunResult* result;
    const at::Tensor* input;
};

} // namespace

PatchMode parsePatchMode(const std::string& name)
{
    if (name == "patch")
        return PatchMode::Patch;
    if (name == "ablate")
        return PatchMode::Ablate;
    if (name == "difference")
        return PatchMode::Difference;
    throw Error("unknown patching mode '" + name + "'; expected patch, ablate or difference");
}

std::string patchModeName(PatchMode mode)
{
    switch (mode) {
    case PatchMode::Patch:
        return "patch";
    case PatchMode::Ablate:
        return "ablate";
    case PatchMode::Difference:
        return "difference";
    }
    return "patch";
}

PatchResult patchImages(Engine& engine, const PatchRequest& request, const ProgressCallback& progress)
{
    if (request.layer.empty())
        throw Error("patching needs a layer");
    if (request.mode != PatchMode::Ablate && request.imageB.empty())
        throw Error(patchModeName(request.mode) + " needs two images, A and B");
    const Model& model = engine.model();
    const Preprocessing& preprocessing = request.setup.preprocessing;
    std::vector<GrabSpec> grabs;
    if (!request.compareLayer.empty() && request.mode != PatchMode::Difference)
        grabs.push_back(GrabSpec{request.compareLayer, CaptureKind::Output, 0});
    const at::Tensor a = loadImageBatch({request.imageA}, preprocessing);
    const at::Tensor b = request.mode == PatchMode::Ablate ? a : loadImageBatch({request.imageB}, preprocessing);

    PatchResult result;
    result.mode = request.mode;
    result.layer = request.layer;
    result.compareLayer = grabs.empty() ? std::string() : request.compareLayer;
    PatchRuns patched;
    AblationRuns ablated;
    std::vector<Run> runs;
    switch (request.mode) {
    case PatchMode::Difference: {
        Request both;
        both.edits = request.edits;
        both.grabOutput(request.layer);
        patched.a = engine.run(both, forwardInputsFromBatch(model, a));
        patched.b = engine.run(both, forwardInputsFromBatch(model, b));
        result.difference = std::make_shared<const InputDifference>(
            compareInputs(patched.a.tensor(request.layer), patched.b.tensor(request.layer)));
        runs = {{"a", "A", &patched.a, &a}, {"b", "B", &patched.b, &b}};
        break;
    }
    case PatchMode::Ablate:
        ablated = ablateChannels(
            engine, forwardInputsFromBatch(model, a), request.layer, request.channels, grabs, request.edits);
        runs = {{"a", "A", &ablated.original, &a}, {"ablated", "A, channels zeroed", &ablated.ablated, &a}};
        break;
    case PatchMode::Patch:
        patched = patchActivation(engine, forwardInputsFromBatch(model, a), forwardInputsFromBatch(model, b),
            request.layer, grabs, request.edits);
        runs = {{"a", "A", &patched.a, &a}, {"b", "B", &patched.b, &b},
            {"patched", "A with B's " + request.layer, &patched.patched, &a}};
        break;
    }
    if (progress)
        progress(Progress{static_cast<int64_t>(runs.size()), static_cast<int64_t>(runs.size()), "runs", {}});

    std::vector<at::Tensor> maps;
    for (const Run& run : runs) {
        PatchColumn column;
        column.key = run.key;
        column.title = run.title;
        const ScoreOutput scores = findScores(run.result->values.front().second, request.setup.scores);
        column.predictions = predictImage(scores, 0, request.setup.labels, 3).top;
        if (scores.kind == OutputKind::Classes)
            column.scores = toFloatTensor(scores.scores[0].detach().to(at::kCPU, at::kFloat).contiguous());
        column.picture = toFloatTensor(pictureOfInput(*run.input, preprocessing));
        if (!result.compareLayer.empty()) {
            const at::Tensor output = run.result->tensor(result.compareLayer);
            column.compareOutput = toFloatTensor(output[0].detach().to(at::kCPU, at::kFloat).contiguous());
            maps.push_back(meanMap(output));
        }
        result.columns.push_back(std::move(column));
    }
    // One scale for all columns, so that a map that changed looks changed.
    if (!maps.empty()) {
        const at::Tensor stacked = at::stack(maps);
        result.mapLow = stacked.min().item<float>();
        result.mapHigh = stacked.max().item<float>();
        const at::Tensor all = normalizeMap(stacked);
        for (size_t i = 0; i < result.columns.size(); ++i)
            result.columns[i].map = toFloatTensor(all[static_cast<int64_t>(i)].contiguous());
    }
    return result;
}

std::vector<std::string> writePatch(const std::string& path, const PatchResult& result, const ExportManifest* manifest)
{
    NamedValues values;
    for (const auto& column : result.columns) {
        if (!column.scores.empty())
            values.emplace_back(column.key + "/scores", toTensor(column.scores));
        if (!column.compareOutput.empty())
            values.emplace_back(column.key + "/" + result.compareLayer, toTensor(column.compareOutput));
    }
    if (result.difference) {
        values.emplace_back("a", toTensor(result.difference->a));
        values.emplace_back("b", toTensor(result.difference->b));
        values.emplace_back("difference", toTensor(result.difference->difference));
        values.emplace_back("ranked_channels", at::tensor(result.difference->ranked, at::kLong));
    }
    if (values.empty())
        throw Error("the patching result holds no tensor to write (the model gives no class scores and no "
                    "comparison layer was chosen)");
    if (!manifest)
        return writeTensors(path, values);
    ExportManifest described = *manifest;
    described.keys.clear();
    for (const auto& [key, value] : values) {
        const auto slash = key.find('/');
        const std::string tail = slash == std::string::npos ? key : key.substr(slash + 1);
        if (tail == "scores")
            described.keys.push_back({key, "", "class scores of run " + key.substr(0, slash)});
        else if (slash != std::string::npos)
            described.keys.push_back({key, tail, "output of run " + key.substr(0, slash)});
        else if (key == "ranked_channels")
            described.keys.push_back({key, result.layer, "channels by mean |a - b|"});
        else
            described.keys.push_back({key, result.layer, key == "difference" ? "output a - b" : "output of " + key});
    }
    return writeTensors(path, values, &described);
}

PatchResult PatchAnalysis::run(AnalysisContext& context, const Request& request)
{
    return patchImages(*context.models.engine(context.model), request, context.progress);
}

} // namespace torchscope
