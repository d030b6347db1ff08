#pragma once

// Training sparse autoencoders (sae/sparse_autoencoder.h) on layers of the loaded model, the
// activation vectors streamed from forward passes over an image folder: nothing is written to
// disk but the SAEs. Every position of a [N, C, H, W] map is one C-vector, a ViT's tokens one
// vector each ([N, T, D]: the class token is token 0 where T − 1 is a square grid), a [N, C]
// output one vector per image. Several layers train from the same pass. The vectors go through a
// shuffle buffer per layer of 64 training batches (SAELens's n_batches_in_buffer), smaller where the
// memory cap says so: when it is full, it is shuffled, its first half trained on and its second
// half kept.
//
// The out folder holds one SAE folder per layer (named by the layer, '/' as '_'): the SAE in
// SAELens's layout, its training checkpoint (SparseAutoencoder::saveCheckpoint) and
// training_log.csv (every step's metrics), and training.json: what the run was asked (layers,
// folder, positions, model hash) and how many of the folder's images it has consumed. A cancelled
// run saves all of it; `resume` goes on from it with the images (or, in a later epoch, the cache's
// shards) not yet consumed (the vectors that were waiting in the shuffle buffers when it stopped
// are not trained on).

#include "common/progress.h"
#include "graph/analysis_context.h"
#include "model/model_setup.h"
#include "sae/sae_types.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace at {
class Tensor;
} // namespace at

namespace torchscope {

class Engine;
class Lockstep;
class Model;

struct SaeTrainingRequest {
    std::vector<std::string> layers; // one SAE each, from one pass
    std::string images; // a folder (class sub-folders allowed)
    ModelSetup setup;
    int64_t expansion = 16; // d_sae = expansion × d_in, unless latents is set
    int64_t latents = 0;
    // Several sizes of every layer's SAE, all trained from the same pass: expansions, or latent
    // counts (instead of expansion / latents). Each size's SAE is saved in the layer's folder name
    // with "-x16" or "-4096" after it; each has its own shuffle buffer under the memory cap.
    std::vector<int64_t> expansions;
    std::vector<int64_t> latentCounts;
    int64_t k = 32;
    bool batchTopK = false;
    std::vector<int64_t> matryoshkaWidths; // see SaeConfig; empty: none
    bool geometricMedianInit = false; // b_dec from the first batch's geometric median
    std::string positions = "all"; // all, class, patches, sample:N (N positions per image)
    int64_t vectors = 0; // stop after this many per SAE (0: one pass over the folder)
    int64_t batch = 4096;
    double learningRate = 4e-4;
    uint64_t seed = 0;
    int64_t memoryBytes = 0; // the shuffle buffers' cap (0: a quarter of the memory available)
    int imageBatch = 16;
    std::string out; // a folder: one SAE folder per layer, named by the layer
    // A folder for the layers' vectors, written as they come (one sub-folder per layer of
    // vectors_NNNNN.npy shards [n, d_in] float32 in the images' order, and cache.json): NumPy reads
    // them. Empty: nothing but the SAEs is written. A complete cache of the same model, layers,
    // folder, positions and seed is read instead of running the model.
    std::string cache;
    int64_t epochs = 1; // passes over the vectors; the passes after the first read the cache
    bool resume = false; // go on from out's checkpoint (the same layers, folder, positions and model)
    int64_t checkpointSteps = 2000; // a checkpoint every this many steps of the first layer (0: only at the end)
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
    int64_t images = 0; // consumed by this call
    int64_t imagesBefore = 0; // consumed by the run it resumed
    int64_t epochs = 0; // passes over the vectors begun (1: the forward passes' only)
    bool fromCache = false; // no forward pass: every vector came from the cache
    bool cancelled = false; // what was trained is saved
    std::vector<std::pair<std::string, std::string>> failures; // unreadable images: path, why
    std::vector<std::string> warnings;
};

// A layer's SAE folder under `out`: the layer's path with '/' as '_'.
std::string saeFolderFor(const std::string& out, const std::string& layer);

// Which of a layer's tokens [N, T, D] the SAE reads at `positions`: [first, first + count).
// `prefix`: the class and register tokens before the patch grid (saePrefixTokens); negative: a
// class token where T − 1 is a square grid, else none. "class" is token 0 (an error with no
// prefix), "patches" the tokens after the prefix, "all" and "sample:N" every token.
std::pair<int64_t, int64_t> saeTokenRange(int64_t tokens, const std::string& positions, int64_t prefix = -1);

// The prefix tokens of a layer's tokens [N, T, D] on the model's input of height × width, as the
// attention maps lay them out (attention/attention_maps.h, tokenLayout); -1 for no grid or no tokens.
int64_t saePrefixTokens(const Model& model, const at::Tensor& activation, int64_t height, int64_t width);

// The vectors an activation holds at `positions` (see above). Throws torchscope::Error for an
// output with no positions to take vectors from, or positions it does not have.
at::Tensor activationVectors(
    const at::Tensor& activation, const std::string& positions, uint64_t seed, int64_t prefix = -1);

// Throws torchscope::Error for a request that cannot run (no layer, no images, k beyond the
// latents, an unknown positions choice, a resume whose checkpoint is missing or was asked for other
// layers, images, positions or model; several epochs without a cache; a cache whose shards are
// not what its cache.json says). `progress` after each image batch (or cache shard): done / total
// images over all epochs,
// values {loss, FVU, L0, dead fraction, vectors} of the first layer's last step; returning false
// cancels and saves what was trained.
// With `lockstep` (a distributed run of several ranks, as torchrun starts them), each rank runs
// its share of the folder's batches and trains its part of every step (request.batch / ranks
// vectors), the gradients averaged over c10d (SparseAutoencoder::trainStep): the SAEs equal one
// process's on the parts concatenated, and rank 0 writes them. A cache is refused there.
SaeTrainingResult trainSparseAutoencoders(Engine& engine, const SaeTrainingRequest& request,
    const ProgressCallback& progress = {}, Lockstep* lockstep = nullptr);

// What the training hands over as it goes (AnalysisContext::deliver), after each batch of images
// with a step: the first layer's newest step.
struct SaeTrainingPart {
    std::string layer;
    int64_t images = 0, totalImages = 0;
    SaeStepMetrics metrics;
};

struct SaeTrainingAnalysis {
    using Request = SaeTrainingRequest;
    using Result = SaeTrainingResult;
    static constexpr const char* name = "sae_train";
    static Result run(AnalysisContext& context, const Request& request);
};

} // namespace torchscope
