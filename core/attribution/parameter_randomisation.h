#pragma once

// Re-initialising a layer's parameters as PyTorch's own reset_parameters() does, on a copy of the
// model that the sanity checks own: Linear and convolutions (kaiming_uniform_(a = sqrt(5)) and a
// bias uniform in ±1 / sqrt(fan_in)), batch / layer / group normalisation (weights 1, biases 0,
// running statistics reset). Each layer draws from a CPU generator seeded `seed` + 1, the way
// Quantus's MPRT calls torch.manual_seed(seed + 1) before each reset_parameters(), so that the same
// seed gives the same weights there and here.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace torchscope {

class Model;

// Whether TorchScope knows how PyTorch initialises this module type ("torch.nn.modules.conv.Conv2d").
bool hasKnownInitialiser(const std::string& qualifiedType);

// The layers a parameter randomisation goes through, in Python's named_modules() order: every
// module with parameters of its own and a known initialiser. `skipped`: the others with parameters
// of their own, as "PATH (TYPE)".
std::vector<std::string> randomisableLayers(const Model& model, std::vector<std::string>* skipped = nullptr);

// The layer's parameters and buffers as they are (to put back after an independent randomisation).
using LayerState = std::vector<std::pair<std::string, at::Tensor>>;
LayerState saveLayerState(Model& model, const std::string& layer);
void restoreLayerState(Model& model, const std::string& layer, const LayerState& state);

// Re-initialises `layer` of `model` in place. Throws torchscope::Error for an unknown layer or type.
void reinitialiseLayer(Model& model, const std::string& layer, uint64_t seed);

} // namespace torchscope
