#pragma once

// Class activation maps from a layer's activations and the score's gradient there, as
// pytorch-grad-cam defines them: Grad-CAM (channel weights: the gradient's spatial mean),
// Grad-CAM++ (Chattopadhay et al. 2018, its closed-form weights), XGrad-CAM (Fu et al. 2020),
// HiResCAM (Draelos and Carin 2020: gradient × activation, summed over channels) and LayerCAM
// (Jiang et al. 2021: ReLU(gradient) × activation). Each map is ReLU'd, at the layer's size.

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

namespace torchscope {

// "grad_cam", "grad_cam_pp", "hires_cam", "xgrad_cam", "layer_cam"
std::vector<std::string> gradientCamMethods();
bool isGradientCam(const std::string& method);

// activations, gradients: [N, C, h, w] float32 -> [N, 1, h, w]. Throws torchscope::Error for an
// unknown method or shapes that differ.
at::Tensor gradientCam(const std::string& method, const at::Tensor& activations, const at::Tensor& gradients);

// EigenCAM (Muhammad and Yeasin 2020): the activations' projection on their first principal
// component (positions as rows, channels centred), as pytorch-grad-cam's get_2d_projection; the
// SVD's arbitrary sign fixed as its get_2d_projection_with_sign_correction fixes it (flipped when
// |min| > |max|, Seg-Eigen-CAM's Eq. 13), then ReLU. No gradient: any output, detection included.
// [N, C, h, w] -> [N, 1, h, w]; NaNs count as 0.
at::Tensor eigenCam(const at::Tensor& activations);

} // namespace torchscope
