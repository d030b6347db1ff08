#pragma once

// The layers' activation vectors on disk (sae train --cache, sae/sae_training.h), for training
// several epochs or again without running the model: one sub-folder per layer (named as the SAE
// folders) of vectors_NNNNN.npy shards, float32 [n, d_in] that NumPy reads, written together so that
// shard j of every layer holds the vectors of the same images, in the folder's order; and
// cache.json: what the vectors are of ("of": model hash, layers, folder, positions, seed, image
// batch), the vectors per layer (and per image), the images per shard, each layer's prefix tokens, and whether the
// pass was complete. Every file is written atomically.

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace torchscope {

// A file's bytes ("" when it cannot be read).
std::string readTextFile(const std::string& path);
// A JSON file, or null when there is none. Throws torchscope::Error when it is not JSON.
nlohmann::json readJsonFile(const std::string& path);

struct VectorCache {
    static constexpr const char* File = "cache.json";

    std::string folder;
    nlohmann::json description; // what the vectors are of
    std::vector<std::string> layers;
    std::vector<std::vector<at::Tensor>> pending; // per layer, not yet written
    std::vector<int64_t> vectors; // per layer, written
    std::vector<int64_t> prefixes; // per layer: a ViT's tokens before its patch grid (-1: none)
    std::vector<int64_t> perImage; // per layer: the vectors an image gives (0: not known)
    std::vector<int64_t> shardImages; // images per shard
    int64_t pendingImages = 0;
    int64_t pendingBytes = 0;
    int64_t shardBytes = int64_t{64} << 20; // a shard is written once the waiting vectors reach this

    std::string shardPath(size_t layer, int64_t shard) const;
    int64_t shards() const;

    // Takes cache.json's `state` when it is of this description (false: none, or of something else).
    // Throws torchscope::Error for a cache.json of this description whose counts are not whole.
    bool open(const nlohmann::json& state);
    // A pass from the start: the layers' folders made, the shards of an earlier pass removed.
    void start();
    // A batch's vectors of a layer, then the images they came from (a shard is written when due).
    void add(size_t layer, const at::Tensor& v);
    void imagesAdded(int64_t n);
    // The waiting vectors as one more shard of every layer.
    void flush();
    void write(bool complete) const; // cache.json
    // Shard j of a layer, checked against cache.json and the SAE's width `dIn` (0: any). Throws
    // torchscope::Error naming the file when it is missing or holds something else.
    at::Tensor read(size_t layer, int64_t shard, int64_t dIn) const;
};

} // namespace torchscope
