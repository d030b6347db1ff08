#pragma once

// Training sparse autoencoders (sae/sparse_autoencoder.h) on layers of the loaded model, the
// activation vectors streamed from forward passes over an image folder: nothing is written to
// disk but the SAEs. Every position of a [N, C, H, W] map is one C-vector, a ViT's tokens one
// vector each ([N, T, D]: the class token is token 0 where T − 1 is a square grid), a [N, C]
// output one vector per image. Several layers train from the same pass. The vectors go through a
// shuffle buffer per layer under the memory cap: when it is full, it is shuffled, its first half
// trained on and its second half kept.

#include "common/progress.h"
#include "model/model_setup.h"
#include "sae/sparse_autoencoder.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace torchscope {

class Engine;

struct SaeTrainingRequest {
    std::vector<std::string> layers; // one SAE each, from one pass
    std::string images; // a folder (class sub-folders allowed)
    ModelSetup setup;
    int64_t expansion = 16; // d_sae = expansion × d_in, unless latents is set
    int64_t latents = 0;
    int64_t k = 32;
    std::string positions = "all"; // all, class, patches, sample:N (N positions per image)
    int64_t vectors = 0; // stop after this many per SAE (0: one pass over the folder)
    int64_t batch = 4096;
    double learningRate = 4e-4;
    uint64_t seed = 0;
    int64_t memoryBytes = 0; // the shuffle buffers' cap (0: a quarter of the memory available)
    int imageBatch = 16;
    std::string out; // a folder: one SAE folder per layer, named by the layer
};

struct SaeTrainingLayer {
    std::string layer;
    std::string folder; // where it was saved
    int64_t dIn = 0;
    int64_t dSae = 0;
    std::vector<SaeStepMetrics> steps; // every step's metrics, in order
};

struct SaeTrainingResult {
    std::vector<SaeTrainingLayer> layers;
    int64_t images = 0;
    bool cancelled = false; // what was trained is saved
    std::vector<std::pair<std::string, std::string>> failures; // unreadable images: path, why
    std::vector<std::string> warnings;
};

// The vectors an activation holds at `positions` (see above). Throws torchscope::Error for an
// output with no positions to take vectors from, or positions it does not have.
at::Tensor activationVectors(const at::Tensor& activation, const std::string& positions, uint64_t seed);

// Throws torchscope::Error for a request that cannot run (no layer, no images, k beyond the
// latents, an unknown positions choice). `progress` after each image batch: done / total images,
// values {loss, FVU, L0, dead fraction} of the first layer's last step; returning false cancels and
// saves what was trained.
SaeTrainingResult trainSparseAutoencoders(
    Engine& engine, const SaeTrainingRequest& request, const ProgressCallback& progress = {});

} // namespace torchscope
