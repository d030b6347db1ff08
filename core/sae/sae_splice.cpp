#include "sae/sae_splice.h"

#include "common/error.h"
#include "sae/sparse_autoencoder.h"

namespace torchscope {

std::vector<at::Tensor> prepareSaeEdit(EditSpec& edit)
{
    if (edit.kind != EditKind::SaeLatents)
        throw Error("edit '" + edit.toString() + "' splices no sparse autoencoder");
    SaeOrigin origin;
    const SparseAutoencoder sae = SparseAutoencoder::load(edit.sae, &origin);
    const SaeConfig& c = sae.config();
    for (const int64_t latent : edit.channels)
        if (latent < 0 || latent >= c.dSae)
            throw Error("edit '" + edit.toString() + "': latent " + std::to_string(latent) + " is out of range: '"
                + edit.sae + "' has " + std::to_string(c.dSae) + " latents");
    const auto w = sae.weights();
    edit.saeK = c.batchTopK ? 0 : c.k;
    edit.saeThreshold = c.batchTopK ? w.at("threshold").item<double>() : 0.0;
    edit.positions = origin.positions == "class" || origin.positions == "patches" ? origin.positions : "all";
    edit.prefixTokens = origin.prefixTokens >= 0 ? origin.prefixTokens : 1;
    if (edit.positions == "patches" && origin.prefixTokens < 0)
        throw Error("'" + edit.sae + "' reads a transformer's patch tokens but does not say how many tokens come "
            + "before them (cfg.json's metadata.prefix_tokens)");
    return {w.at("W_enc"), w.at("b_enc"), w.at("W_dec"), w.at("b_dec")};
}

std::vector<at::Tensor> prepareSaeEdits(Request& request, const std::vector<at::Tensor>& given)
{
    std::vector<at::Tensor> tensors;
    size_t next = 0;
    for (auto& edit : request.edits) {
        if (edit.kind == EditKind::SaeLatents) {
            const auto four = prepareSaeEdit(edit);
            tensors.insert(tensors.end(), four.begin(), four.end());
        } else if (edit.takesTensor()) {
            if (next >= given.size())
                throw Error("edit '" + edit.toString() + "' needs a tensor, and none was given");
            tensors.push_back(given[next++]);
        }
    }
    return tensors;
}

} // namespace torchscope
