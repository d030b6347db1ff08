#include "imaging/same_size_images.h"

#include "common/error.h"
#include "common/strings.h"
#include "common/tensor_conversion.h"
#include "imaging/image_tensor.h"
#include "preprocess/preprocess_tensor.h"

#include <ATen/ATen.h>

namespace torchscope {

SameSizeImages loadSameSizeImages(const std::vector<std::string>& paths, const Preprocessing& preprocessing,
    const std::string& sizeAdvice, const std::string& noImages)
{
    SameSizeImages out;
    std::vector<at::Tensor> inputs;
    for (const auto& path : paths) {
        try {
            at::Tensor input = loadImageBatch({path}, preprocessing);
            if (!inputs.empty() && !input.sizes().equals(inputs.front().sizes()))
                throw Error("its input is " + shapeToString(input.sizes().vec()) + ", the first image's "
                    + shapeToString(inputs.front().sizes().vec()) + "; " + sizeAdvice);
            out.pictures.push_back(toFloatTensor(pictureOfInput(input, preprocessing)));
            out.paths.push_back(path);
            inputs.push_back(std::move(input));
        } catch (const std::exception& e) {
            out.failures.emplace_back(path, e.what());
        }
    }
    if (inputs.empty())
        throw Error(out.failures.empty() ? noImages
                                         : "no image could be read; the first, '" + out.failures.front().first
                    + "': " + out.failures.front().second);
    out.batch = at::cat(inputs);
    return out;
}

} // namespace torchscope
