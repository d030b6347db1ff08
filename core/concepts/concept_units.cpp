#include "concepts/concept_units.h"

#include "common/error.h"
#include "common/strings.h"
#include "model/model.h"
#include "probe/linear_probe.h"
#include "sae/sae_evaluation.h"
#include "sae/sae_training.h"
#include "sae/sparse_autoencoder.h"

#include <ATen/ATen.h>

#include <optional>

namespace torchscope {

struct ConceptUnits::Impl {
    std::string kind = "channels";
    std::string layer;
    std::optional<SparseAutoencoder> sae;
    std::string positions = "patches"; // channels of tokens: the patch grid; an SAE: its own
    std::string source; // the file
    LinearProbe probe;
};

ConceptUnits::ConceptUnits()
    : impl_(std::make_unique<Impl>())
{ }

ConceptUnits::~ConceptUnits() = default;
ConceptUnits::ConceptUnits(ConceptUnits&&) noexcept = default;
ConceptUnits& ConceptUnits::operator=(ConceptUnits&&) noexcept = default;

ConceptUnits ConceptUnits::parse(const std::string& spec, const std::string& device)
{
    ConceptUnits units;
    Impl& u = *units.impl_;
    if (spec == "channels")
        return units;
    if (startsWith(spec, "sae:")) {
        u.kind = "SAE latents";
        u.source = spec.substr(4);
        SaeOrigin origin;
        u.sae.emplace(SparseAutoencoder::load(u.source, &origin, device));
        u.layer = origin.layer;
        u.positions = origin.positions;
        if (startsWith(u.positions, "sample:"))
            u.positions = "all"; // a sample of the positions trained it; every position is dissected
        return units;
    }
    if (startsWith(spec, "probe:")) {
        u.kind = "probe directions";
        u.source = spec.substr(6);
        u.probe = loadLinearProbe(u.source);
        u.layer = u.probe.layer;
        return units;
    }
    throw Error(
        "--units '" + spec + "' is not one of channels, sae:FOLDER (a saved SAE) or probe:FILE (a linear probe)");
}

std::string ConceptUnits::kind() const
{
    return impl_->kind;
}

std::string ConceptUnits::layer() const
{
    return impl_->layer;
}

std::vector<std::string> ConceptUnits::unitNames() const
{
    if (impl_->kind != "probe directions")
        return {};
    const auto& names = impl_->probe.classNames;
    // Two classes have one output: the second class's logit.
    if (impl_->probe.training.weight.size(0) == 1)
        return names.size() == 2 ? std::vector<std::string>{names[1]} : std::vector<std::string>{};
    return names;
}

at::Tensor ConceptUnits::maps(const Model& model, const at::Tensor& activation, int64_t height, int64_t width) const
{
    const Impl& u = *impl_;
    const at::Tensor a = activation.detach().to(at::kFloat);
    const int64_t n = a.size(0);
    if (u.kind == "probe directions") {
        // The probe reads dimension 1 as its channels and pools the rest (probe/probe_training.h).
        const auto& t = u.probe.training;
        if (a.dim() == 3)
            throw Error("the probe '" + u.source + "' reads dimension 1 of the layer's "
                + shapeToString(a.sizes().vec())
                + " as its channels, which for tokens [N, T, D] are the tokens: its directions lie on no patch grid; "
                  "dissect a probe of a map [N, C, H, W] or of [N, F]");
        if (a.dim() < 2)
            throw Error(
                "the probe '" + u.source + "' reads [N, C, ...]; the layer gives " + shapeToString(a.sizes().vec()));
        const at::Tensor x = a.dim() == 2 ? a.unsqueeze(2) : a.flatten(2); // [N, C, P]
        const int64_t c = x.size(1), p = x.size(2);
        const int64_t outputs = t.weight.size(0), features = t.weight.size(1);
        const at::Tensor w = t.weight.to(a.device()), b = t.bias.to(a.device());
        at::Tensor scores; // [N, outputs, P]
        if (u.probe.pooling == ProbePooling::Average || a.dim() == 2) {
            if (features != c)
                throw Error("the probe '" + u.source + "' reads " + std::to_string(features)
                    + " features; the layer has " + std::to_string(c) + " channels (" + shapeToString(a.sizes().vec())
                    + ")");
            const at::Tensor z
                = (x - t.featureMean.to(a.device()).view({1, c, 1})) / t.featureStd.to(a.device()).view({1, c, 1});
            scores = at::einsum("oc,ncp->nop", {w, z}) + b.view({1, outputs, 1});
        } else {
            if (features != c * p)
                throw Error("the probe '" + u.source + "' reads " + std::to_string(features)
                    + " flattened values; the layer gives " + std::to_string(c * p) + " ("
                    + shapeToString(a.sizes().vec()) + ")");
            const at::Tensor z
                = (x - t.featureMean.to(a.device()).view({1, c, p})) / t.featureStd.to(a.device()).view({1, c, p});
            scores = at::einsum("ocp,ncp->nop", {w.view({outputs, c, p}), z})
                + b.view({1, outputs, 1}) / static_cast<double>(p);
        }
        if (a.dim() == 4)
            return scores.reshape({n, outputs, a.size(2), a.size(3)});
        return scores.reshape({n, outputs, 1, p});
    }
    if (u.kind == "channels" && a.dim() == 4)
        return a;
    if (u.kind == "channels" && a.dim() == 2)
        return a.reshape({n, a.size(1), 1, 1});
    const int64_t prefix = saePrefixTokens(model, a, height, width);
    const at::Tensor vectors = saeEvaluationVectors(a, u.positions, prefix); // [N * P, D]
    const auto [gridHeight, gridWidth] = saeGrid(model, a, u.positions, height, width);
    at::Tensor values = vectors;
    if (u.sae) {
        if (vectors.size(1) != u.sae->config().dIn)
            throw Error("the layer gives vectors of " + std::to_string(vectors.size(1)) + " values, but the SAE '"
                + u.source + "' reads " + std::to_string(u.sae->config().dIn));
        values = u.sae->encode(vectors);
    }
    const int64_t units = values.size(1);
    if (values.size(0) != n * gridHeight * gridWidth)
        throw Error("the layer's " + std::to_string(values.size(0) / std::max<int64_t>(n, 1))
            + " positions do not lie on a " + std::to_string(gridHeight) + " x " + std::to_string(gridWidth) + " grid");
    return values.reshape({n, gridHeight, gridWidth, units}).permute({0, 3, 1, 2}).contiguous();
}

} // namespace torchscope
