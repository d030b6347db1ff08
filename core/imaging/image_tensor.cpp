#include "imaging/image_tensor.h"

#include "common/error.h"
#include "common/strings.h"
#include "preprocess/preprocess_tensor.h"

#include <ATen/ATen.h>

namespace torchscope {

at::Tensor imageToTensor(const DecodedImage& image)
{
    const at::Tensor hwc = at::from_blob(
        const_cast<float*>(image.pixels.data()), {image.height, image.width, image.channels}, at::kFloat);
    return hwc.permute({2, 0, 1}).clone();
}

at::Tensor loadImageBatch(const std::vector<std::string>& paths, const Preprocessing& preprocessing)
{
    std::vector<at::Tensor> images;
    for (const auto& path : paths) {
        images.push_back(preprocessImage(imageToTensor(decodeImage(path)), preprocessing));
        if (images.back().sizes() != images.front().sizes())
            throw Error("images of different sizes cannot form one batch: '" + paths.front() + "' gives "
                + shapeToString(images.front().sizes().vec()) + ", '" + path + "' gives "
                + shapeToString(images.back().sizes().vec()) + "; use a preprocessing with a crop");
    }
    if (images.empty())
        throw Error("no images to load");
    return at::stack(images);
}

} // namespace torchscope
