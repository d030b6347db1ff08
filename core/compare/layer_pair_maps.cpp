#include "compare/layer_pair_maps.h"

#include "common/tensor_conversion.h"
#include "export/manifest.h"
#include "export/write_tensors.h"
#include "graph/engine.h"
#include "graph/request.h"
#include "imaging/image_tensor.h"
#include "model/model.h"
#include "preprocess/preprocess_tensor.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

namespace torchscope {
namespace {

FloatTensor outputOf(Engine& engine, const std::string& layer, const at::Tensor& batch, const std::string& dtype)
{
    const Model& model = engine.model();
    Request grab;
    grab.grabOutput(layer);
    const at::Tensor input = (dtype.empty() ? batch : batch.to(scalarTypeNamed(dtype))).to(c10::Device(model.device()));
    const RunResult result = engine.run(grab, forwardInputsFromBatch(model, input));
    return toFloatTensor(result.tensor(layer)[0]);
}

} // namespace

LayerPairResult layerPairMaps(Engine& a, Engine& b, const LayerPairRequest& request)
{
    const at::NoGradGuard noGrad;
    const at::Tensor batch = loadImageBatch({request.image}, request.preprocessing);
    LayerPairResult result;
    result.image = request.image;
    result.layerA = request.layerA;
    result.layerB = request.layerB;
    result.a = outputOf(a, request.layerA, batch, request.dtypeA);
    result.b = outputOf(b, request.layerB, batch, request.dtypeB);
    return result;
}

std::vector<std::string> writeLayerPairMaps(
    const std::string& path, const LayerPairResult& result, const ExportManifest* manifest)
{
    const NamedValues values{{"a", toTensor(result.a)}, {"b", toTensor(result.b)}};
    if (!manifest)
        return writeTensors(path, values);
    ExportManifest described = *manifest;
    described.keys = {{"a", result.layerA, "output of run a"}, {"b", result.layerB, "output of run b"}};
    return writeTensors(path, values, &described);
}

} // namespace torchscope
