#pragma once

namespace torchscope {

// torchvision 0.29 registers the backward of its operators (roi_align, roi_pool) from Python
// (torchvision/_autograd_registrations.py), so in a C++ process its operator library alone leaves
// them without one: PyTorch's fallback then passes no gradient through them, with only a warning.
// This registers the same backward (torchvision::_roi_align_backward, _roi_pool_backward) for
// each of them that is loaded and has none. Safe to call again after every library load.
void registerTorchvisionAutograd();

} // namespace torchscope
