#include "export/manifest.h"

#include "common/atomic_file.h"
#include "common/error.h"
#include "graph/request.h"
#include "preprocess/preprocessing_json.h"

#include <nlohmann/json.hpp>
#include <openssl/evp.h>
#include <torch/version.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>

namespace torchscope {
namespace {

std::string kindName(CaptureKind kind)
{
    switch (kind) {
    case CaptureKind::Output:
        return "output";
    case CaptureKind::Input:
        return "input";
    case CaptureKind::Gradient:
        return "gradient";
    case CaptureKind::Attention:
        return "attention";
    }
    return "output";
}

nlohmann::ordered_json keyEntry(const ManifestKey& key)
{
    nlohmann::ordered_json entry{{"key", key.key}, {"module", key.module}, {"kind", key.kind}, {"call", key.call}};
    if (key.inputIndex >= 0)
        entry["input_index"] = key.inputIndex;
    if (!key.statistic.empty())
        entry["statistic"] = key.statistic;
    return entry;
}

std::string nowUtc()
{
    const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm utc{};
    gmtime_r(&now, &utc);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
    return text;
}

nlohmann::ordered_json fileEntry(const std::string& path)
{
    std::error_code error;
    const auto absolute = std::filesystem::absolute(path, error);
    const auto bytes = std::filesystem::file_size(path, error);
    return {{"path", path}, {"absolute_path", absolute.string()},
        {"bytes", error ? nlohmann::ordered_json() : nlohmann::ordered_json(bytes)}, {"sha256", sha256OfFile(path)}};
}

} // namespace

ManifestKey ManifestKey::capture(const std::string& key)
{
    if (key == "output")
        return {key, "", "model output"};
    if (key == "input:grad")
        return {key, "", "gradient of the model input"};
    if (key.rfind("probe:", 0) == 0)
        return {key, key.substr(6), "linear probe scores"};
    const CaptureKey capture = CaptureKey::parse(key);
    ManifestKey entry{key, capture.path, kindName(capture.kind), capture.call};
    if (capture.kind == CaptureKind::Input)
        entry.inputIndex = capture.inputIndex;
    return entry;
}

std::string sha256OfFile(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw Error("cannot read '" + path + "' to hash it for the export's manifest");
    const std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> context(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    if (!context || EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr) != 1)
        throw Error("OpenSSL cannot start a SHA-256 digest");
    std::vector<char> buffer(1 << 20);
    while (in) {
        in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
        if (in.gcount() > 0)
            EVP_DigestUpdate(context.get(), buffer.data(), static_cast<size_t>(in.gcount()));
    }
    if (in.bad())
        throw Error("reading '" + path + "' failed while hashing it for the export's manifest");
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    EVP_DigestFinal_ex(context.get(), digest, &length);
    static const char* hex = "0123456789abcdef";
    std::string text;
    for (unsigned int i = 0; i < length; ++i) {
        text += hex[digest[i] >> 4];
        text += hex[digest[i] & 0xf];
    }
    return text;
}

std::string manifestPathFor(const std::string& exportPath)
{
    const std::filesystem::path path(exportPath);
    std::error_code error;
    if (std::filesystem::is_directory(path, error))
        return (path / "manifest.json").string();
    return (path.parent_path() / (path.stem().string() + ".manifest.json")).string();
}

std::string manifestJson(const ExportManifest& m)
{
    nlohmann::ordered_json json;
    json["format"] = "torchscope-manifest/1";
    json["created"] = nowUtc();
    json["torchscope"] = TORCHSCOPE_VERSION;
    json["libtorch"] = TORCH_VERSION;
    json["command"] = m.command;
    json["model"] = m.model.empty() ? nlohmann::ordered_json() : fileEntry(m.model);
    if (!m.modelB.empty())
        json["model_b"] = fileEntry(m.modelB);
    json["device"] = m.device;
    json["dtype"] = m.dtype.empty() ? "as saved" : m.dtype;
    json["preprocessing"]
        = m.preprocessing ? nlohmann::ordered_json(preprocessingToObject(*m.preprocessing)) : nlohmann::ordered_json();
    json["labels"] = m.labels;
    json["truncation"] = m.truncation.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(m.truncation);
    json["edits"] = m.edits;
    auto& keys = json["keys"] = nlohmann::ordered_json::array();
    for (const auto& key : m.keys)
        keys.push_back(keyEntry(key));
    auto& images = json["images"] = nlohmann::ordered_json::array();
    for (const auto& image : m.images) {
        nlohmann::ordered_json entry = fileEntry(image.path);
        if (image.width > 0)
            entry["size"] = {image.width, image.height};
        images.push_back(std::move(entry));
    }
    json["targets"] = m.targets;
    auto& settings = json["settings"] = nlohmann::ordered_json::object();
    for (const auto& [name, value] : m.settings)
        settings[name] = value;
    return json.dump(2) + "\n";
}

std::string writeManifest(const std::string& exportPath, const ExportManifest& manifest)
{
    const std::string path = manifestPathFor(exportPath);
    writeFileAtomically(path, manifestJson(manifest));
    return path;
}

} // namespace torchscope
