#include "inputs.h"

#include "common/error.h"
#include "common/strings.h"
#include "export/pt_export.h"
#include "graph/engine.h"
#include "model/model.h"

#ifdef TORCHSCOPE_HAVE_IMAGING
#include "imaging/image_decoder.h"
#include "imaging/image_tensor.h"
#endif

#include <filesystem>

namespace torchscope::cli {

bool isTensorFile(const std::string& path)
{
    return endsWith(path, ".pt") || endsWith(path, ".pth");
}

ForwardInputs loadForwardInputs(
    const Model& model, const std::vector<std::string>& inputs, const Preprocessing& preprocessing)
{
    const bool allTensors = std::all_of(inputs.begin(), inputs.end(), isTensorFile);
    if (allTensors) {
        std::vector<c10::IValue> values;
        for (const auto& path : inputs)
            values.push_back(readTorchSaveFile(path));
        if (values.size() == 1 && values[0].isTensor())
            return {forwardInputsFromBatch(model, values[0].toTensor()), {}};
        return {values, {}};
    }
    if (std::any_of(inputs.begin(), inputs.end(), isTensorFile))
        throw Error("--input mixes tensor files and images; give either tensors or images");

#ifdef TORCHSCOPE_HAVE_IMAGING
    std::vector<std::string> images;
    for (const auto& input : inputs) {
        if (std::filesystem::is_directory(input)) {
            const auto found = listImages(input);
            if (found.empty())
                throw Error("the folder '" + input + "' holds no images (.png, .jpg, .bmp, .tif, .webp)");
            images.insert(images.end(), found.begin(), found.end());
        } else {
            images.push_back(input);
        }
    }
    return {forwardInputsFromBatch(model, loadImageBatch(images, preprocessing)), images};
#else
    throw Error("this TorchScope was built without OpenCV (TORCHSCOPE_IMAGING=OFF), so it reads no images; "
                "give a tensor saved with torch.save as --input");
#endif
}

} // namespace torchscope::cli
