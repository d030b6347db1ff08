#include "attribution/layer_cams.h"

#include "common/error.h"
#include "common/strings.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <vector>

namespace torchscope {

std::vector<std::string> gradientCamMethods()
{
    return {"grad_cam", "grad_cam_pp", "hires_cam", "xgrad_cam", "layer_cam"};
}

bool isGradientCam(const std::string& method)
{
    const auto methods = gradientCamMethods();
    return std::find(methods.begin(), methods.end(), method) != methods.end();
}

at::Tensor gradientCam(const std::string& method, const at::Tensor& activations, const at::Tensor& gradients)
{
    if (activations.dim() != 4 || !activations.sizes().equals(gradients.sizes()))
        throw Error("a CAM needs a layer's [N, C, h, w] activations and gradients of one shape, got "
            + shapeToString(activations.sizes().vec()) + " and " + shapeToString(gradients.sizes().vec()));
    const at::Tensor a = activations.to(at::kFloat), g = gradients.to(at::kFloat);
    at::Tensor cam;
    if (method == "grad_cam") {
        cam = (g.mean({2, 3}, true) * a).sum(1, true);
    } else if (method == "grad_cam_pp") {
        // Equation 19 of Chattopadhay et al., with pytorch-grad-cam's eps and zero where g is zero.
        const at::Tensor g2 = g * g, g3 = g2 * g;
        const at::Tensor sumA = a.sum({2, 3}, true);
        const at::Tensor aij = at::where(g != 0, g2 / (2 * g2 + sumA * g3 + 1e-6), at::zeros_like(g));
        cam = ((at::relu(g) * aij).sum({2, 3}, true) * a).sum(1, true);
    } else if (method == "xgrad_cam") {
        const at::Tensor sumA = a.sum({2, 3}, true);
        cam = ((g * a / (sumA + 1e-7)).sum({2, 3}, true) * a).sum(1, true);
    } else if (method == "hires_cam") {
        cam = (g * a).sum(1, true);
    } else if (method == "layer_cam") {
        cam = (at::relu(g) * a).sum(1, true);
    } else {
        throw Error("unknown CAM '" + method + "'; expected " + join(gradientCamMethods(), ", "));
    }
    return at::relu(cam);
}

at::Tensor eigenCam(const at::Tensor& activations)
{
    if (activations.dim() != 4)
        throw Error(
            "EigenCAM needs a layer's [N, C, h, w] activations, got " + shapeToString(activations.sizes().vec()));
    const int64_t channels = activations.size(1), height = activations.size(2), width = activations.size(3);
    std::vector<at::Tensor> maps;
    for (int64_t n = 0; n < activations.size(0); ++n) {
        const at::Tensor a = at::nan_to_num(activations[n].to(at::kDouble), 0.0, 0.0, 0.0);
        at::Tensor rows = a.reshape({channels, height * width}).t();
        rows = rows - rows.mean(0, true);
        const at::Tensor vh = std::get<2>(at::linalg_svd(rows, /*full_matrices=*/false));
        at::Tensor projection = at::mv(rows, vh[0]);
        if (projection.min().abs().item<double>() > projection.max().abs().item<double>())
            projection = -projection;
        maps.push_back(projection.view({1, 1, height, width}));
    }
    return at::relu(at::cat(maps)).to(at::kFloat);
}

} // namespace torchscope
