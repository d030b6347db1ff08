#pragma once

// Splicing a saved sparse autoencoder into the model with its latents edited: the edit
// PATH:sae:DIR:ablate|scale|steer:... (graph/request.h, EditKind::SaeLatents) runs inside the
// instrumented graph, so predictions, grabs and gradients downstream all see it. Its vectors x
// become x + (f' − f) W_dec: the reconstruction with the edit plus the SAE's error term, so that an
// edit that changes no code leaves the output bit-identical.

#include "graph/request.h"

#include <ATen/core/Tensor.h>

#include <vector>

namespace torchscope {

// Reads the SAE the edit names (TopK or BatchTopK, sae/sparse_autoencoder.h), fills the edit's k
// (or threshold), positions and prefix tokens from its file, and returns the four tensors the edit
// takes with the run: W_enc, b_enc, W_dec, b_dec. Throws torchscope::Error for an SAE file that
// cannot be read, a latent beyond its d_sae, or an edit of another kind.
std::vector<at::Tensor> prepareSaeEdit(EditSpec& edit);

// Every SaeLatents edit of the request prepared in order, each one's tensors appended to
// `editTensors` at its place among the edits that take tensors (the others' given in `given`, in
// order). Returns the tensors for Engine::run.
std::vector<at::Tensor> prepareSaeEdits(Request& request, const std::vector<at::Tensor>& given);

} // namespace torchscope
