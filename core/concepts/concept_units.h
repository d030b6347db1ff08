#pragma once

// The units a dissection labels, each a map over a layer's positions, from one code path:
//   channels      the layer's own: a map's channels [N, C, h, w]; a ViT's tokens [N, T, D] as D maps
//                 over the patch grid (class and register tokens left out); [N, D] as D maps of 1 × 1
//   sae:FOLDER    a saved SAE's latents (sae/sparse_autoencoder.h), the SAE encoding the layer's
//                 vector at each of its positions (the SAE's own: every position, the patches, the
//                 class token)
//   probe:FILE    a linear probe's directions (probe/linear_probe.h; its .pt state dict or TorchScript
//                 module): per position, w · (x − mean) / std + b for average pooling (whose mean over
//                 positions is the probe's score), the position's share of it for flatten; one unit
//                 per output (one for two classes)

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace torchscope {

class Model;

class ConceptUnits {
public:
    // Throws torchscope::Error for a spec it does not know or a file that is neither an SAE nor a probe.
    static ConceptUnits parse(const std::string& spec, const std::string& device = "cpu");
    ~ConceptUnits();
    ConceptUnits(ConceptUnits&&) noexcept;
    ConceptUnits& operator=(ConceptUnits&&) noexcept;

    std::string kind() const; // "channels", "SAE latents", "probe directions"
    std::string layer() const; // the layer an SAE or probe reads ("" when its file does not say; channels: "")
    std::vector<std::string> unitNames() const; // a probe's classes; else empty
    // The units of `activation` (the layer's output on images of height × width) as maps
    // [N, units, h, w], float. Throws torchscope::Error when the units do not fit the layer.
    at::Tensor maps(const Model& model, const at::Tensor& activation, int64_t height, int64_t width) const;

private:
    ConceptUnits();
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace torchscope
