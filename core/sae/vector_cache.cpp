#include "sae/vector_cache.h"

#include "common/atomic_file.h"
#include "common/error.h"
#include "export/array_files.h"
#include "export/read_tensors.h"
#include "sae/sae_training.h"

#include <ATen/ATen.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace torchscope {

std::string readTextFile(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// A JSON file, or null when there is none. Throws torchscope::Error when it is not JSON.
nlohmann::json readJsonFile(const std::string& path)
{
    std::ifstream in(path);
    if (!in)
        return nullptr;
    try {
        return nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
        throw Error("'" + path + "' is not JSON: " + e.what());
    }
}

std::string VectorCache::shardPath(size_t layer, int64_t shard) const
{
    char name[32];
    std::snprintf(name, sizeof(name), "vectors_%05lld.npy", static_cast<long long>(shard));
    return (std::filesystem::path(saeFolderFor(folder, layers[layer])) / name).string();
}

int64_t VectorCache::shards() const
{
    return static_cast<int64_t>(shardImages.size());
}

bool VectorCache::open(const nlohmann::json& state)
{
    if (!state.is_object() || state.value("of", nlohmann::json()) != description)
        return false;
    try {
        vectors = state.at("vectors").get<std::vector<int64_t>>();
        shardImages = state.at("shard_images").get<std::vector<int64_t>>();
        prefixes = state.value("prefix_tokens", std::vector<int64_t>(layers.size(), -1));
        perImage = state.value("vectors_per_image", std::vector<int64_t>(layers.size(), 0));
    } catch (const nlohmann::json::exception& e) {
        throw Error("'" + (std::filesystem::path(folder) / File).string() + "': " + e.what());
    }
    if (vectors.size() != layers.size() || prefixes.size() != layers.size() || perImage.size() != layers.size())
        throw Error("'" + (std::filesystem::path(folder) / File).string() + "' counts the vectors of "
            + std::to_string(vectors.size()) + " layers, not " + std::to_string(layers.size()));
    return true;
}

void VectorCache::start()
{
    pending.assign(layers.size(), {});
    vectors.assign(layers.size(), 0);
    prefixes.assign(layers.size(), -1);
    perImage.assign(layers.size(), 0);
    shardImages.clear();
    for (const auto& layer : layers) { // the shards of an earlier pass that this one does not continue
        const std::filesystem::path where = saeFolderFor(folder, layer);
        std::error_code error;
        std::filesystem::create_directories(where, error);
        if (error)
            throw Error("cannot make the cache's folder '" + where.string() + "': " + error.message());
        for (const auto& entry : std::filesystem::directory_iterator(where, error)) {
            const std::string name = entry.path().filename().string();
            if (name.rfind("vectors_", 0) == 0 && entry.path().extension() == ".npy")
                std::filesystem::remove(entry.path(), error);
        }
    }
}

void VectorCache::add(size_t layer, const at::Tensor& v)
{
    if (pending.size() != layers.size())
        pending.assign(layers.size(), {});
    pending[layer].push_back(v.detach().to(at::kCPU, at::kFloat).contiguous());
    pendingBytes += v.numel() * static_cast<int64_t>(sizeof(float));
}

void VectorCache::imagesAdded(int64_t n)
{
    pendingImages += n;
    if (pendingBytes >= shardBytes)
        flush();
}

void VectorCache::flush()
{
    if (pendingImages == 0 && pendingBytes == 0)
        return;
    for (size_t i = 0; i < layers.size(); ++i) {
        const at::Tensor shard = pending[i].empty() ? at::empty({0, 0}, at::kFloat) : at::cat(pending[i]);
        writeFileAtomically(shardPath(i, shards()), encodeNpy(shard));
        vectors[i] += shard.size(0);
        pending[i].clear();
    }
    shardImages.push_back(pendingImages);
    pendingImages = 0;
    pendingBytes = 0;
}

void VectorCache::write(bool complete) const
{
    const nlohmann::json state = {{"of", description}, {"vectors", vectors}, {"shard_images", shardImages},
        {"prefix_tokens", prefixes}, {"vectors_per_image", perImage}, {"complete", complete},
        {"format",
            "one folder per layer of vectors_NNNNN.npy: float32 [n, d_in], shard j of every layer "
            "from the same images, in the folder's order"}};
    writeFileAtomically((std::filesystem::path(folder) / File).string(), state.dump(2) + "\n");
}

at::Tensor VectorCache::read(size_t layer, int64_t shard, int64_t dIn) const
{
    const std::string path = shardPath(layer, shard);
    if (!std::filesystem::exists(path))
        throw Error(
            "the cache's shard '" + path + "' is missing; " + File + " counts " + std::to_string(shards()) + " shards");
    const at::Tensor t = decodeNpy(readTextFile(path), path);
    if (t.dim() != 2 || t.scalar_type() != at::kFloat || (t.size(0) > 0 && dIn > 0 && t.size(1) != dIn)) {
        std::ostringstream message;
        message << "the cache's shard '" << path << "' holds " << t.sizes() << " " << t.scalar_type()
                << "; the SAE reads float32 vectors [n, " << dIn << "]";
        throw Error(message.str());
    }
    return t;
}

} // namespace torchscope
