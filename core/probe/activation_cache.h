#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace torchscope {

// A layer's probe features for one dataset, kept so that a second probe (or a sweep) on the same
// layer never runs the model again. Entries are keyed by the model file's content hash, so a new
// checkpoint saved over the old path never reuses stale activations.
struct CachedFeatures {
    at::Tensor features; // [N, F], float, CPU
    at::Tensor sampleIds; // [N], int64: the dataset positions the rows belong to
};

class ActivationCache {
public:
    // Memory only, or also a folder of .pt files that survives the process.
    explicit ActivationCache(std::string directory = {});

    std::optional<CachedFeatures> find(const std::string& key);
    void store(const std::string& key, const CachedFeatures& entry); // disk errors are not fatal
    void clear();
    size_t entries() const;
    const std::string& directory() const { return directory_; }

    // Everything that decides a layer's features.
    static std::string key(const std::string& modelHash, const std::string& layer, const std::string& pooling,
        const std::string& preprocessing, const std::string& dataFingerprint);

private:
    std::string directory_;
    mutable std::mutex mutex_;
    std::map<std::string, CachedFeatures> memory_;
};

// A 64-bit FNV-1a hash of a file's bytes, as 16 hex digits. Throws torchscope::Error when unreadable.
std::string fileContentHash(const std::string& path);
// The same hash of a string.
std::string textHash(const std::string& text);

} // namespace torchscope
