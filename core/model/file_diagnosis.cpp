#include "model/file_diagnosis.h"

#include "common/strings.h"

#include <caffe2/serialize/inline_container.h>
#include <caffe2/serialize/versions.h>
#include <torch/version.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

namespace torchscope {
namespace {

std::string readStart(const std::string& path, size_t count)
{
    std::ifstream in(path, std::ios::binary);
    std::string bytes(count, '\0');
    in.read(bytes.data(), static_cast<std::streamsize>(count));
    bytes.resize(static_cast<size_t>(in.gcount()));
    return bytes;
}

bool looksLikeText(const std::string& bytes)
{
    return std::all_of(bytes.begin(), bytes.end(),
        [](unsigned char c) { return c == '\n' || c == '\r' || c == '\t' || (c >= 32 && c < 127) || c >= 128; });
}

std::string hexStart(const std::string& bytes)
{
    std::ostringstream out;
    for (size_t i = 0; i < bytes.size() && i < 8; ++i) {
        static const char* digits = "0123456789abcdef";
        const auto c = static_cast<unsigned char>(bytes[i]);
        out << (i ? " " : "") << digits[c >> 4] << digits[c & 15];
    }
    return out.str();
}

// A zip written by torch.save holds ARCHIVE/data.pkl and tensor records but no code/.
std::string describeTorchSaveArchive(caffe2::serialize::PyTorchStreamReader& reader)
{
    std::string pickle;
    if (reader.hasRecord("data.pkl")) {
        auto [data, size] = reader.getRecord("data.pkl");
        pickle.assign(static_cast<const char*>(data.get()), size);
    }
    const std::string advice = "; load it in Python and save it with torch.jit.save(torch.jit.script(model), path)";
    if (pickle.find("collections\nOrderedDict") != std::string::npos
        && pickle.find("torch.nn.modules") == std::string::npos)
        return "this is a state_dict (a dictionary of weights) saved with torch.save, not a TorchScript archive"
            + advice;
    if (pickle.find("torch.nn.modules") != std::string::npos || pickle.find("models.") != std::string::npos)
        return "this is a whole nn.Module pickled with torch.save, not a TorchScript archive" + advice;
    return "this is a torch.save archive (tensors or Python objects), not a TorchScript archive" + advice;
}

const std::string buildAgainstNewerLibTorch
    = "build TorchScope against the LibTorch of the PyTorch that saved it: CMAKE_ARGS=\"-DCMAKE_PREFIX_PATH=$(python3 -c "
      "'import torch;print(torch.utils.cmake_prefix_path)')\" scripts/setup.sh (see the README), or save the model "
      "again with PyTorch " TORCH_VERSION;

std::string versionMismatch(const std::string& message)
{
    static const std::regex found(R"(file with version (\d+), but the maximum supported version for reading is (\d+))");
    std::smatch match;
    if (!std::regex_search(message, match, found))
        return {};
    return "this TorchScript archive has file format version " + match[1].str() + ", but this TorchScope's LibTorch "
        TORCH_VERSION " reads versions up to " + match[2].str() + ": it was saved by a newer PyTorch; "
        + buildAgainstNewerLibTorch;
}

} // namespace

std::string newerPyTorchAdvice(const std::string& path, const std::string& message)
{
    static const std::regex unknown(R"(Unknown builtin op: aten::([A-Za-z0-9_]+)|Unknown type name|Arguments for call are not valid|Expected at most \d+ argument|Unknown keyword argument)");
    std::smatch match;
    if (!std::regex_search(message, match, unknown))
        return {};
    std::string version = "?";
    try {
        version = std::to_string(caffe2::serialize::PyTorchStreamReader(path).version());
    } catch (const c10::Error&) {
    }
    const std::string what = match[1].matched ? "the operator aten::" + match[1].str() + ", which" : "code that";
    return "the model uses " + what + " LibTorch " TORCH_VERSION " does not know (file format version " + version
        + "; this LibTorch reads up to " + std::to_string(caffe2::serialize::kMaxSupportedFileFormatVersion)
        + "): it was probably saved by a newer PyTorch; " + buildAgainstNewerLibTorch;
}

std::string describeFileStart(const std::string& bytes)
{
    if (bytes.empty())
        return "an empty file (0 bytes)";
    if (startsWith(bytes, "version https://git-lfs"))
        return "a Git LFS pointer (the real file was never fetched: run 'git lfs pull')";
    if (startsWith(bytes, "\x89PNG"))
        return "a PNG image";
    if (startsWith(bytes, "\xff\xd8\xff"))
        return "a JPEG image";
    if (startsWith(bytes, "\x1f\x8b"))
        return "a gzip-compressed file";
    if (startsWith(bytes,
            "\x7f"
            "ELF"))
        return "an executable or shared library (ELF)";
    if (bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x80 && bytes[1] >= 2 && bytes[1] <= 5)
        return "a legacy (pre-1.6, non-zip) torch.save pickle, not a TorchScript archive";
    if (startsWith(bytes, "<!DOCTYPE") || startsWith(bytes, "<html"))
        return "an HTML page (a failed download?)";
    if (looksLikeText(bytes)) {
        const std::string firstLine = bytes.substr(0, std::min(bytes.find('\n'), size_t{60}));
        return "a text file (it begins \"" + firstLine + "\")";
    }
    return "not a zip archive (it begins with bytes " + hexStart(bytes) + ")";
}

std::optional<std::string> diagnoseModelFile(const std::string& path)
{
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::exists(path, ec))
        return "no such file";
    if (fs::is_directory(path, ec))
        return "this is a folder, not a model file";
    const auto size = fs::file_size(path, ec);
    if (ec)
        return "cannot read the file: " + ec.message();
    std::ifstream probe(path, std::ios::binary);
    if (!probe)
        return "cannot open the file for reading (permissions?)";

    const std::string start = readStart(path, 64);
    if (size == 0 || !startsWith(start, "PK\x03\x04"))
        return "this is " + describeFileStart(start) + ", not a TorchScript archive";

    try {
        caffe2::serialize::PyTorchStreamReader reader(path);
        const auto records = reader.getAllRecords();
        const bool hasCode
            = std::any_of(records.begin(), records.end(), [](const std::string& r) { return startsWith(r, "code/"); });
        if (!hasCode && !reader.hasRecord("constants.pkl"))
            return describeTorchSaveArchive(reader);
    } catch (const c10::Error& e) {
        if (std::string newer = versionMismatch(e.what_without_backtrace()); !newer.empty())
            return newer;
        return "the zip archive is truncated or damaged (" + std::to_string(size)
            + " bytes; its central directory cannot be read): the file was probably cut short while "
              "downloading or copying";
    }
    return std::nullopt;
}

} // namespace torchscope
