#include "visualize/robustness.h"

#include "visualize/seeded_random.h"

#include <ATen/ATen.h>

#include <cmath>
#include <vector>

namespace torchscope {

at::Tensor robustlyTransformed(const at::Tensor& images, const RobustnessTransforms& transforms, SeededRandom& random)
{
    if (!transforms.enabled)
        return images;
    const int64_t n = images.size(0), height = images.size(2), width = images.size(3);
    std::vector<double> theta;
    for (int64_t i = 0; i < n; ++i) {
        const auto shiftX = static_cast<double>(random.integer(-transforms.jitter, transforms.jitter));
        const auto shiftY = static_cast<double>(random.integer(-transforms.jitter, transforms.jitter));
        const double scale = transforms.scaleMin + random.uniform() * (transforms.scaleMax - transforms.scaleMin);
        const double angle = (2.0 * random.uniform() - 1.0) * transforms.rotateDegrees * M_PI / 180.0;
        // Output position p samples the input at theta · [p, 1] (coordinates in [-1, 1]).
        const double c = std::cos(angle) / scale, s = std::sin(angle) / scale;
        theta.insert(theta.end(),
            {c, -s, 2.0 * shiftX / static_cast<double>(width), s, c, 2.0 * shiftY / static_cast<double>(height)});
    }
    const at::Tensor matrices = at::tensor(theta, at::kDouble).to(images.device(), at::kFloat).view({n, 2, 3});
    const at::Tensor grid = at::affine_grid_generator(matrices, images.sizes(), /*align_corners=*/false);
    return at::grid_sampler(images, grid, /*bilinear*/ 0, /*reflection*/ 2, /*align_corners=*/false);
}

} // namespace torchscope
