#include "model/file_diagnosis.h"

#include "common/strings.h"
#include "common/zip_archive.h"

#include <caffe2/serialize/inline_container.h>
#include <caffe2/serialize/versions.h>
#include <torch/version.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <string_view>

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
std::string describeTorchSave(const std::string& pickle)
{
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
    = "build TorchScope against the LibTorch of the PyTorch that saved it (pin that torch in scripts/requirements.txt "
      "and run scripts/setup.sh, or take one you have: CMAKE_ARGS=\"-DCMAKE_PREFIX_PATH=$(python -c "
      "'import torch;print(torch.utils.cmake_prefix_path)')\" scripts/setup.sh; see the README), or save the model "
      "again with PyTorch " TORCH_VERSION;

// What PyTorchStreamReader would refuse (no version record, a version out of its range) and a
// zip with no TorchScript code (torch.save), said in words; nothing for a TorchScript archive.
std::optional<std::string> describeArchive(const ZipArchive& archive)
{
    const std::vector<std::string> names = archive.names();
    const std::string firstName = names.empty() ? "" : names.front();
    const size_t slash = firstName.find('/');
    if (slash == std::string::npos || slash == 0)
        return "this is a zip archive, but not one written by PyTorch (its first entry is '" + firstName
            + "', not ARCHIVE/...)";
    const std::string prefix = firstName.substr(0, slash + 1);
    bool hasCode = false, hasConstants = false;
    for (const auto& record : names) {
        hasCode = hasCode || startsWith(record, prefix + "code/");
        hasConstants = hasConstants || record == prefix + "constants.pkl";
    }
    // torch.export.save writes the same zip layout with archive_format = "pt2" and no code/.
    if (const auto format = archive.tryRead(prefix + "archive_format", 16); format && startsWith(*format, "pt2"))
        return std::nullopt;
    auto version = archive.tryRead(prefix + ".data/version", 64);
    if (!version)
        version = archive.tryRead(prefix + "version", 64);
    if (!version)
        return "this zip archive has no version record (" + prefix
            + "version): it was not written by "
              "torch.jit.save or torch.save, or it is damaged";
    char* end = nullptr;
    const long long number = std::strtoll(version->c_str(), &end, 10);
    if (end == version->c_str())
        return "this zip archive's version record holds no number: it is damaged";
    if (number > static_cast<long long>(caffe2::serialize::kMaxSupportedFileFormatVersion))
        return "this TorchScript archive has file format version " + std::to_string(number)
            + ", but this TorchScope's LibTorch " TORCH_VERSION " reads versions up to "
            + std::to_string(caffe2::serialize::kMaxSupportedFileFormatVersion) + ": it was saved by a newer PyTorch; "
            + buildAgainstNewerLibTorch;
    if (number < static_cast<long long>(caffe2::serialize::kMinSupportedFileFormatVersion))
        return "this archive has file format version " + std::to_string(number)
            + ", older than LibTorch " TORCH_VERSION " reads ("
            + std::to_string(caffe2::serialize::kMinSupportedFileFormatVersion)
            + " and later): save it again with a recent PyTorch";
    if (!hasCode && !hasConstants)
        return describeTorchSave(archive.tryRead(prefix + "data.pkl", uint64_t{64} << 20).value_or(""));
    return std::nullopt;
}

} // namespace

std::string describeImageStart(const std::string& bytes)
{
    using namespace std::string_view_literals; // "\0" inside a magic number: lengths must not stop there
    const auto at = [&](size_t offset, std::string_view magic) {
        return bytes.size() >= offset + magic.size() && std::string_view(bytes).substr(offset, magic.size()) == magic;
    };
    if (at(0, "\x89PNG"sv))
        return "a PNG image";
    if (at(0, "\xff\xd8\xff"sv))
        return "a JPEG image";
    if (at(0, "GIF87a"sv) || at(0, "GIF89a"sv))
        return "a GIF image";
    if (at(0, "BM"sv))
        return "a BMP image";
    if (at(0, "II*"sv) || at(0, "MM\0*"sv))
        return "a TIFF image";
    if (at(0, "RIFF"sv) && at(8, "WEBP"sv))
        return "a WebP image";
    if (at(4, "ftypheic"sv) || at(4, "ftypheix"sv) || at(4, "ftyphevc"sv) || at(4, "ftypmif1"sv) || at(4, "ftypmsf1"sv))
        return "a HEIC image";
    if (at(4, "ftypavif"sv))
        return "an AVIF image";
    if (bytes.size() >= 3 && bytes[0] == 'P' && bytes[1] >= '1' && bytes[1] <= '7'
        && std::isspace(static_cast<unsigned char>(bytes[2])))
        return "a PNM image (PBM, PGM or PPM)";
    if (at(0, "\x76\x2f\x31\x01"sv))
        return "an OpenEXR image";
    if (at(0, "#?RADIANCE"sv) || at(0, "#?RGBE"sv))
        return "a Radiance HDR image";
    if (at(0, "\x59\xa6\x6a\x95"sv))
        return "a Sun raster image";
    if (at(0, "8BPS"sv))
        return "a Photoshop image (PSD)";
    if (at(0, "\0\0\1\0"sv))
        return "an icon (ICO)";
    if (at(0, "\xff\x0a"sv) || at(4, "jP  \r\n"sv))
        return "a JPEG XL or JPEG 2000 image";
    const size_t tag = bytes.find('<');
    if (tag != std::string::npos && tag < 8 && (bytes.find("<svg", tag) != std::string::npos))
        return "an SVG drawing";
    return {};
}

std::string newerPyTorchAdvice(const std::string& path, const std::string& message)
{
    static const std::regex unknown(
        R"(Unknown builtin op: aten::([A-Za-z0-9_]+)|Unknown type name|Arguments for call are not valid|Expected at most \d+ argument|Unknown keyword argument)");
    std::smatch match;
    if (!std::regex_search(message, match, unknown))
        return {};
    std::string version = "?";
    try {
        version = std::to_string(caffe2::serialize::PyTorchStreamReader(path).version());
    } catch (const c10::Error&) { }
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
    if (const std::string image = describeImageStart(bytes); !image.empty())
        return image;
    if (startsWith(bytes, "%PDF-"))
        return "a PDF document";
    if (startsWith(bytes, "\x93NUMPY"))
        return "a NumPy array (.npy)";
    if (startsWith(bytes, "\x89HDF\r\n"))
        return "an HDF5 file (Keras .h5?)";
    if (startsWith(bytes, "PK\x03\x04"))
        return "a zip archive";
    if (bytes.size() >= 10 && bytes.compare(8, 2, "{\"") == 0)
        return "a safetensors file (tensors only, no model code)";
    if (startsWith(bytes, "\x1f\x8b"))
        return "a gzip-compressed file";
    if (startsWith(bytes,
            "\x7f"
            "ELF"))
        return "an executable or shared library (ELF)";
    if (bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x80 && bytes[1] >= 2 && bytes[1] <= 5)
        return "a legacy (pre-1.6, non-zip) torch.save pickle, not a TorchScript archive";
    if (startsWith(bytes, "<!DOCTYPE html") || startsWith(bytes, "<!doctype html") || startsWith(bytes, "<html"))
        return "an HTML page (a failed download?)";
    if (looksLikeText(bytes)) {
        const std::string firstLine = bytes.substr(0, std::min(bytes.find('\n'), size_t{60}));
        return "a text file (it begins \"" + firstLine + "\")";
    }
    return "a file of no kind TorchScope knows (it begins with bytes " + hexStart(bytes) + ")";
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

    // Read with libzip, not LibTorch's PyTorchStreamReader: that one leaks its zip reader when it
    // throws on a damaged archive (LeakSanitizer found it), and libzip's errors say what is wrong.
    std::unique_ptr<ZipArchive> archive;
    try {
        archive = std::make_unique<ZipArchive>(path);
    } catch (const ZipOpenError& e) {
        return "the zip archive is truncated or damaged (" + std::to_string(size) + " bytes; " + e.reason
            + "): the file was probably cut short while downloading or copying";
    }
    return describeArchive(*archive);
}

} // namespace torchscope
