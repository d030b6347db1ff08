#include "compare/compare_folder.h"

#include "common/error.h"
#include "compare/compare_run.h"
#include "graph/engine.h"
#include "imaging/image_folder.h"
#include "model/model.h"
#include "record/folder_run.h"

namespace torchscope {
namespace {

ModelKey keyOf(const std::string& path, const std::string& device, const std::string& dtype = "")
{
    ModelKey key;
    key.path = path;
    key.device = device.empty() ? "cpu" : device;
    key.dtype = dtype;
    return key;
}

} // namespace

CompareResult CompareAnalysis::run(AnalysisContext& context, const Request& request)
{
    const ImageFolder folder = ImageFolder::scan(request.folder);
    if (folder.images.empty())
        throw Error("the folder '" + request.folder + "' holds no images (.png, .jpg, .bmp, .tif, .webp)");
    FolderRunOptions options;
    options.batchSize = request.batch;
    const BatchStream stream = folderBatches(folder, request.preprocessing, options);
    const auto progress = [&](const Progress& p) { return context.reportProgress({p.done, p.total, {}, {}}); };
    if (request.config.mode == CompareMode::Precision) // loads the model once per precision itself
        return comparePrecisions(request.modelA, LoadOptions{}, request.config, stream, progress);
    const auto a = context.models.model(keyOf(request.modelA, request.device));
    const auto b = context.models.model(keyOf(request.modelB, request.device));
    return compareModels(a, b, request.config, stream, progress);
}

LayerPairResult LayerMapsAnalysis::run(AnalysisContext& context, const Request& request)
{
    const CompareRequest& compare = request.compare;
    const bool precision = compare.config.mode == CompareMode::Precision;
    LayerPairRequest pair{request.image, request.layerA, request.layerB, compare.preprocessing,
        precision ? "float64" : "", precision ? "float32" : ""};
    const std::string device = precision ? "cpu" : compare.device;
    auto a = context.models.engine(keyOf(compare.modelA, device, pair.dtypeA));
    auto b = context.models.engine(keyOf(precision ? compare.modelA : compare.modelB, device, pair.dtypeB));
    return layerPairMaps(*a, *b, pair);
}

} // namespace torchscope
