#include "probe/activation_cache.h"

#include "common/error.h"
#include "export/pt_export.h"

#include <ATen/ATen.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <vector>

namespace torchscope {
namespace {

constexpr uint64_t kFnvOffset = 1469598103934665603ull;
constexpr uint64_t kFnvPrime = 1099511628211ull;

uint64_t fnv1a(uint64_t hash, const char* data, size_t size)
{
    for (size_t i = 0; i < size; ++i) {
        hash ^= static_cast<unsigned char>(data[i]);
        hash *= kFnvPrime;
    }
    return hash;
}

std::string hex(uint64_t value)
{
    std::ostringstream out;
    out << std::hex << std::setw(16) << std::setfill('0') << value;
    return out.str();
}

} // namespace

std::string fileContentHash(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw Error("cannot read '" + path + "' to hash it");
    uint64_t hash = kFnvOffset;
    std::vector<char> buffer(1 << 20);
    while (in) {
        in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
        hash = fnv1a(hash, buffer.data(), static_cast<size_t>(in.gcount()));
    }
    return hex(hash);
}

std::string textHash(const std::string& text)
{
    return hex(fnv1a(kFnvOffset, text.data(), text.size()));
}

ActivationCache::ActivationCache(std::string directory)
    : directory_(std::move(directory))
{ }

std::string ActivationCache::key(const std::string& modelHash, const std::string& layer, const std::string& pooling,
    const std::string& preprocessing, const std::string& dataFingerprint)
{
    // The layer stays readable in the file name; the rest is hashed.
    std::string safeLayer = layer.empty() ? "root" : layer;
    for (auto& c : safeLayer)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-')
            c = '_';
    return modelHash + "-" + safeLayer + "-" + textHash(pooling + "\n" + preprocessing + "\n" + dataFingerprint);
}

std::optional<CachedFeatures> ActivationCache::find(const std::string& key)
{
    std::lock_guard lock(mutex_);
    if (const auto it = memory_.find(key); it != memory_.end())
        return it->second;
    if (directory_.empty())
        return std::nullopt;
    const auto file = std::filesystem::path(directory_) / (key + ".pt");
    if (!std::filesystem::exists(file))
        return std::nullopt;
    try {
        const auto dict = readTorchSaveFile(file.string()).toGenericDict();
        CachedFeatures entry{dict.at("features").toTensor(), dict.at("sample_ids").toTensor()};
        memory_[key] = entry;
        return entry;
    } catch (const std::exception&) {
        return std::nullopt; // an unreadable cache file is a miss, and the next store replaces it
    }
}

void ActivationCache::store(const std::string& key, const CachedFeatures& entry)
{
    std::lock_guard lock(mutex_);
    memory_[key] = entry;
    if (directory_.empty())
        return;
    try {
        std::filesystem::create_directories(directory_);
        writePtDictionary((std::filesystem::path(directory_) / (key + ".pt")).string(),
            {{"features", entry.features}, {"sample_ids", entry.sampleIds}});
    } catch (const std::exception&) {
        // A full disk or a read-only cache folder costs a re-run next time, nothing more.
    }
}

void ActivationCache::clear()
{
    std::lock_guard lock(mutex_);
    memory_.clear();
}

size_t ActivationCache::entries() const
{
    std::lock_guard lock(mutex_);
    return memory_.size();
}

} // namespace torchscope
