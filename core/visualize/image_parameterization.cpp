#include "visualize/image_parameterization.h"

#include "visualize/seeded_random.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace torchscope {
namespace {

// Square root of ImageNet's colour covariance (Lucid), its columns scaled to a largest norm of 1.
at::Tensor decorrelationMatrix()
{
    const double m[3][3] = {{0.26, 0.09, 0.02}, {0.27, 0.00, -0.05}, {0.27, -0.09, 0.03}};
    double largest = 0.0;
    for (int c = 0; c < 3; ++c)
        largest = std::max(largest, std::sqrt(m[0][c] * m[0][c] + m[1][c] * m[1][c] + m[2][c] * m[2][c]));
    std::vector<float> values;
    for (const auto& row : m)
        for (double v : row)
            values.push_back(static_cast<float>(static_cast<float>(v) / static_cast<float>(largest)));
    return at::tensor(values).view({3, 3});
}

// 1 / max(|f|, 1 / max(H, W)) over the real FFT's frequencies [H, W/2+1], as [H, W/2+1, 1].
at::Tensor spectrumScale(int64_t height, int64_t width)
{
    const int64_t columns = width / 2 + 1;
    std::vector<double> scale;
    for (int64_t y = 0; y < height; ++y) {
        const double fy = static_cast<double>(y < (height + 1) / 2 ? y : y - height) / static_cast<double>(height);
        for (int64_t x = 0; x < columns; ++x) {
            const double fx = static_cast<double>(x) / static_cast<double>(width);
            const double f = std::sqrt(fx * fx + fy * fy);
            scale.push_back(1.0 / std::max(f, 1.0 / static_cast<double>(std::max(height, width))));
        }
    }
    return at::tensor(scale, at::kDouble).to(at::kFloat).view({height, columns, 1});
}

at::Tensor normalValues(at::IntArrayRef shape, SeededRandom& random)
{
    int64_t count = 1;
    for (int64_t s : shape)
        count *= s;
    std::vector<double> values(static_cast<size_t>(count));
    for (double& v : values)
        v = random.normal();
    return (at::tensor(values, at::kDouble).to(at::kFloat) * 0.01f).view(shape);
}

} // namespace

ParameterizedImage::ParameterizedImage(Parameterization parameterization, int64_t images, int64_t channels,
    int64_t height, int64_t width, bool decorrelate, SeededRandom& random, c10::Device device)
    : parameterization_(parameterization)
    , height_(height)
    , width_(width)
    , decorrelate_(decorrelate && channels == 3)
{
    if (parameterization == Parameterization::Fft) {
        parameters_ = normalValues({images, channels, height, width / 2 + 1, 2}, random);
        spectrumScale_ = spectrumScale(height, width).to(device);
    } else {
        parameters_ = normalValues({images, channels, height, width}, random);
    }
    parameters_ = parameters_.to(device).requires_grad_(true);
    if (decorrelate_)
        colourMatrix_ = decorrelationMatrix().to(device);
}

at::Tensor ParameterizedImage::pixels() const
{
    at::Tensor image = parameters_;
    if (parameterization_ == Parameterization::Fft) {
        const at::Tensor spectrum = at::view_as_complex(spectrumScale_ * parameters_);
        image = at::fft_irfftn(spectrum, at::IntArrayRef{height_, width_}, at::IntArrayRef{2, 3}, "ortho") / 4.0;
    }
    if (decorrelate_)
        image = at::matmul(image.permute({0, 2, 3, 1}), colourMatrix_.t()).permute({0, 3, 1, 2});
    return at::sigmoid(image);
}

} // namespace torchscope
