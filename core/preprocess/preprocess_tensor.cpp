#include "preprocess/preprocess_tensor.h"

#include "common/error.h"
#include "common/strings.h"

#include <ATen/ATen.h>

#include <cmath>

namespace torchscope {

namespace {

// Bilinear with antialiasing (torchvision's Resize of images) or nearest (of label maps).
at::Tensor resized(const at::Tensor& image, at::IntArrayRef size, bool nearest)
{
    if (nearest)
        return at::upsample_nearest2d(image.unsqueeze(0).to(at::kFloat), size).squeeze(0).to(image.scalar_type());
    return at::_upsample_bilinear2d_aa(image.unsqueeze(0), size, false).squeeze(0);
}

// torchvision's Resize, then CenterCrop (zero-padded where the crop is larger), of [C, H, W].
at::Tensor resizeAndCrop(at::Tensor image, const Preprocessing& p, bool nearest)
{
    if (p.resizeHeight > 0 && p.resizeWidth > 0) {
        if (p.resizeHeight != image.size(1) || p.resizeWidth != image.size(2))
            image = resized(image, {p.resizeHeight, p.resizeWidth}, nearest);
    } else if (p.resize > 0) {
        // torchvision: the shorter side becomes `resize`, the longer one int(resize * long / short).
        const int64_t h = image.size(1), w = image.size(2);
        const int64_t shorter = std::min(h, w), longer = std::max(h, w);
        const int64_t newShort = p.resize;
        const auto newLong = static_cast<int64_t>(static_cast<double>(newShort) * longer / shorter);
        const int64_t newH = h <= w ? newShort : newLong, newW = h <= w ? newLong : newShort;
        if (newH != h || newW != w)
            image = resized(image, {newH, newW}, nearest);
    }
    if (p.cropHeight > 0 && p.cropWidth > 0) {
        const int64_t h = image.size(1), w = image.size(2);
        if (p.cropHeight > h || p.cropWidth > w) {
            // torchvision pads with zeros when the crop is larger than the image.
            const int64_t padTop = std::max<int64_t>(0, (p.cropHeight - h) / 2);
            const int64_t padLeft = std::max<int64_t>(0, (p.cropWidth - w) / 2);
            at::Tensor padded
                = at::zeros({image.size(0), std::max<int64_t>(h, p.cropHeight), std::max<int64_t>(w, p.cropWidth)},
                    image.options());
            padded.narrow(1, padTop, h).narrow(2, padLeft, w).copy_(image);
            image = padded;
        }
        // Python's round() (half to even), as torchvision's center_crop uses it.
        const auto top = static_cast<int64_t>(std::nearbyint((image.size(1) - p.cropHeight) / 2.0));
        const auto left = static_cast<int64_t>(std::nearbyint((image.size(2) - p.cropWidth) / 2.0));
        image = image.narrow(1, top, p.cropHeight).narrow(2, left, p.cropWidth);
    }
    return image;
}

} // namespace

at::Tensor preprocessImage(const at::Tensor& input, const Preprocessing& p)
{
    if (input.dim() != 3 || (input.size(0) != 1 && input.size(0) != 3))
        throw Error("an image must be [channels, height, width] with 1 or 3 channels, got "
            + shapeToString(input.sizes().vec()));
    at::Tensor image = input.to(at::kFloat);
    if (p.grayscale && image.size(0) == 3) {
        image = (0.2989 * image[0] + 0.587 * image[1] + 0.114 * image[2]).unsqueeze(0);
    } else if (!p.grayscale && image.size(0) == 1) {
        image = image.expand({3, -1, -1}).contiguous();
    }

    image = resizeAndCrop(image, p, false);
    if (p.scale != 1.0)
        image = image * p.scale;
    if (p.bgr && image.size(0) == 3)
        image = image.flip({0});
    if (!p.mean.empty()) {
        const auto channels = image.size(0);
        if (static_cast<int64_t>(p.mean.size()) != channels)
            throw Error("the preprocessing has " + std::to_string(p.mean.size()) + " mean values for an image with "
                + std::to_string(channels) + " channel(s)");
        const at::Tensor mean = at::tensor(p.mean, at::kDouble).to(at::kFloat).view({channels, 1, 1});
        const at::Tensor std = at::tensor(p.std, at::kDouble).to(at::kFloat).view({channels, 1, 1});
        image = (image - mean) / std;
    }
    return image.contiguous();
}

at::Tensor pictureOfInput(const at::Tensor& input, const Preprocessing& p)
{
    at::Tensor x = (input.dim() == 4 ? input[0] : input).to(at::kCPU, at::kFloat).clone();
    if (x.dim() != 3)
        throw Error("a model input picture needs [channels, height, width], got " + shapeToString(x.sizes().vec()));
    for (int64_t c = 0; c < x.size(0); ++c) {
        const size_t i = static_cast<size_t>(c);
        if (i < p.std.size() && i < p.mean.size())
            x[c].mul_(p.std[i]).add_(p.mean[i]);
    }
    if (p.bgr && x.size(0) == 3)
        x = x.flip({0});
    x = x / p.scale;
    if (x.size(0) == 1)
        x = x.expand({3, x.size(1), x.size(2)});
    return x.slice(0, 0, 3).clamp(0, 1).permute({1, 2, 0}).contiguous();
}

at::Tensor preprocessLabels(const at::Tensor& labels, const Preprocessing& preprocessing)
{
    if (labels.dim() != 3)
        throw Error("label maps must be [maps, height, width], got " + shapeToString(labels.sizes().vec()));
    return resizeAndCrop(labels, preprocessing, true).contiguous();
}

} // namespace torchscope
