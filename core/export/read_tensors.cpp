#include "export/read_tensors.h"

#include "common/error.h"
#include "common/strings.h"
#include "common/zip_archive.h"
#include "export/array_files.h"
#include "export/pt_export.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <regex>
#include <tuple>
#include <vector>

namespace torchscope {
namespace {

// The bytes a tensor of these sizes and element size holds; the largest uint64_t when a size is
// negative or the product of the sizes that are not 0 overflows an int64 (a tensor of 0 elements
// with such sizes cannot be made either: its strides overflow).
uint64_t declaredBytes(const std::vector<int64_t>& sizes, size_t elementSize)
{
    constexpr uint64_t Largest = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    uint64_t total = elementSize;
    bool empty = false;
    for (const int64_t size : sizes) {
        if (size < 0)
            return std::numeric_limits<uint64_t>::max();
        if (size == 0)
            empty = true;
        else if (__builtin_mul_overflow(total, static_cast<uint64_t>(size), &total) || total > Largest)
            return std::numeric_limits<uint64_t>::max();
    }
    return empty ? 0 : total;
}

at::ScalarType numpyType(const std::string& descr, const std::string& name)
{
    for (const ArrayDtype& dtype : arrayDtypes())
        if (dtype.numpy && descr == dtype.numpy)
            return dtype.type;
    throw Error(
        "array '" + name + "' has NumPy type " + descr + "; TorchScope reads little-endian bool, integers and floats");
}

std::map<std::string, at::Tensor> readNpz(const std::string& path)
{
    const ZipArchive archive(path, ".npz archive");
    std::map<std::string, at::Tensor> tensors;
    for (std::string name : archive.names()) {
        if (!endsWith(name, ".npy"))
            continue;
        // Refused before anything is allocated when the record declares more than the file holds.
        const std::string bytes = archive.read(name);
        name.resize(name.size() - 4);
        tensors[name] = decodeNpy(bytes, name);
    }
    return tensors;
}

at::ScalarType safetensorsType(const std::string& name, const std::string& path, const std::string& key)
{
    std::vector<std::string> known;
    for (const ArrayDtype& dtype : arrayDtypes()) {
        if (name == dtype.safetensors)
            return dtype.type;
        known.emplace_back(dtype.safetensors);
    }
    const std::string last = known.back();
    known.pop_back();
    throw Error("'" + path + "': tensor '" + key + "' has the safetensors dtype " + name + "; TorchScope reads "
        + join(known, ", ") + " and " + last);
}

// A .safetensors file (8-byte little-endian header length, the JSON header, the data): the header
// is read only when the file holds it, and each tensor's byte range is held against its dtype and
// shape and the data that is there before it is allocated.
std::map<std::string, at::Tensor> readSafetensors(const std::string& path)
{
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in)
        throw Error("cannot read '" + path + "': no such file or not readable");
    const auto fileSize = static_cast<uint64_t>(in.tellg());
    in.seekg(0);
    unsigned char prefix[8] = {};
    if (fileSize < 8 || !in.read(reinterpret_cast<char*>(prefix), 8))
        throw Error("'" + path + "' is too short for a .safetensors file (" + std::to_string(fileSize) + " bytes)");
    uint64_t headerLength = 0;
    for (int k = 0; k < 8; ++k)
        headerLength |= static_cast<uint64_t>(prefix[k]) << (8 * k);
    constexpr uint64_t LargestHeader = 100 << 20; // the safetensors library's own limit
    if (headerLength > fileSize - 8 || headerLength > LargestHeader)
        throw Error("'" + path + "' declares a .safetensors header of " + std::to_string(headerLength)
            + " bytes, but the file holds " + std::to_string(fileSize - 8) + " after the length"
            + (headerLength > LargestHeader ? " (and the format allows 100 MB)" : "")
            + ": it is not a .safetensors file or it is cut short");
    std::string text(headerLength, '\0');
    in.read(text.data(), static_cast<std::streamsize>(headerLength));
    nlohmann::json header;
    try {
        header = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        throw Error("'" + path + "' has a .safetensors header that is not JSON: " + e.what());
    }
    if (!header.is_object())
        throw Error("'" + path + "' has a .safetensors header that is not a JSON object");
    const uint64_t dataSize = fileSize - 8 - headerLength;
    struct Entry {
        std::string key;
        at::ScalarType type;
        std::vector<int64_t> sizes;
        uint64_t begin, end;
    };
    std::vector<Entry> entries;
    for (const auto& item : header.items()) {
        const std::string key = item.key(); // not a structured binding: the lambda below captures it
        const nlohmann::json& entry = item.value();
        if (key == "__metadata__")
            continue;
        const auto bad = [&](const std::string& what) { return Error("'" + path + "': tensor '" + key + "' " + what); };
        if (!entry.is_object() || !entry.contains("dtype") || !entry["dtype"].is_string() || !entry.contains("shape")
            || !entry["shape"].is_array() || !entry.contains("data_offsets") || !entry["data_offsets"].is_array()
            || entry["data_offsets"].size() != 2)
            throw bad("needs dtype, shape and data_offsets [begin, end] in the header");
        std::vector<int64_t> sizes;
        for (const auto& size : entry["shape"]) {
            if (!size.is_number_unsigned())
                throw bad("has a shape that is not a list of sizes");
            sizes.push_back(size.get<uint64_t>() > (uint64_t{1} << 62) ? -1 : size.get<int64_t>());
        }
        const auto& offsets = entry["data_offsets"];
        if (!offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned())
            throw bad("has data_offsets that are not byte positions");
        const uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
        if (begin > end || end > dataSize)
            throw bad("claims bytes " + std::to_string(begin) + " to " + std::to_string(end) + ", but the data holds "
                + std::to_string(dataSize) + ": the file is damaged or cut short");
        const at::ScalarType type = safetensorsType(entry["dtype"].get<std::string>(), path, key);
        const uint64_t declared = declaredBytes(sizes, c10::elementSize(type));
        if (declared != end - begin)
            throw bad("of shape " + entry["shape"].dump() + " needs "
                + (declared == std::numeric_limits<uint64_t>::max() ? std::string("more bytes than any file")
                                                                    : std::to_string(declared) + " bytes")
                + ", its data_offsets give " + std::to_string(end - begin));
        entries.push_back({key, type, sizes, begin, end});
    }
    // As the safetensors library requires: the tensors' byte ranges follow each other without gaps
    // or overlaps and cover the data exactly, so that what is allocated is what the file holds
    // (overlapping ranges would let a small file declare many copies of its data).
    std::sort(entries.begin(), entries.end(),
        [](const Entry& a, const Entry& b) { return std::tie(a.begin, a.end) < std::tie(b.begin, b.end); });
    uint64_t covered = 0;
    for (const auto& entry : entries) {
        if (entry.begin != covered)
            throw Error("'" + path + "': tensor '" + entry.key + "' starts at byte " + std::to_string(entry.begin)
                + " of the data where " + std::to_string(covered)
                + " was next: the tensors' byte ranges overlap or leave gaps, which the format does not allow");
        covered = entry.end;
    }
    if (covered != dataSize)
        throw Error("'" + path + "': the tensors cover " + std::to_string(covered) + " of the data's "
            + std::to_string(dataSize) + " bytes: the file is damaged or cut short");
    std::map<std::string, at::Tensor> tensors;
    for (const auto& entry : entries) {
        at::Tensor tensor = at::empty(entry.sizes, at::TensorOptions().dtype(entry.type));
        in.seekg(static_cast<std::streamoff>(8 + headerLength + entry.begin));
        const auto bytes = static_cast<std::streamsize>(entry.end - entry.begin);
        if (bytes > 0 && !in.read(static_cast<char*>(tensor.data_ptr()), bytes))
            throw Error("'" + path + "': tensor '" + entry.key + "' could not be read whole");
        tensors[entry.key] = tensor;
    }
    return tensors;
}

} // namespace

at::Tensor decodeNpy(const std::string& bytes, const std::string& name)
{
    if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0)
        throw Error("'" + name + "' is not a .npy array");
    const int major = static_cast<unsigned char>(bytes[6]);
    const size_t lengthBytes = major == 1 ? 2 : 4;
    if (bytes.size() < 8 + lengthBytes)
        throw Error("'" + name + "' has a cut .npy header");
    size_t headerLength = 0;
    for (size_t k = 0; k < lengthBytes; ++k)
        headerLength |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + k])) << (8 * k);
    constexpr size_t LargestHeader = 10000; // numpy.load's own limit (max_header_size)
    if (headerLength > LargestHeader)
        throw Error("'" + name + "' declares a .npy header of " + std::to_string(headerLength)
            + " bytes; NumPy itself reads at most 10000");
    const size_t start = 8 + lengthBytes + headerLength;
    if (start > bytes.size())
        throw Error("'" + name + "' has a cut .npy header");
    const std::string header = bytes.substr(8 + lengthBytes, headerLength);
    std::smatch descr, order, shape;
    if (!std::regex_search(header, descr, std::regex("'descr':\\s*'([^']+)'"))
        || !std::regex_search(header, order, std::regex("'fortran_order':\\s*(True|False)"))
        || !std::regex_search(header, shape, std::regex("'shape':\\s*\\(([^)]*)\\)")))
        throw Error("'" + name + "' has a .npy header TorchScope cannot read: " + header);
    if (order[1] == "True")
        throw Error("array '" + name + "' is in Fortran order; save it C-contiguous (numpy.ascontiguousarray)");
    std::vector<int64_t> sizes;
    const std::string dims = shape[1];
    const std::regex digits("\\d+");
    for (std::sregex_iterator it(dims.begin(), dims.end(), digits), end; it != end; ++it)
        sizes.push_back(it->str().size() > 18 ? -1 : std::stoll(it->str()));
    const at::ScalarType type = numpyType(descr[1], name);
    // What the header declares is checked against the bytes that are there before anything is
    // allocated: a shape of gigabytes over a few bytes is refused, not tried.
    const uint64_t expected = declaredBytes(sizes, c10::elementSize(type));
    if (expected == std::numeric_limits<uint64_t>::max() || bytes.size() - start != expected)
        throw Error("array '" + name + "' of shape (" + dims + ") should hold "
            + (expected == std::numeric_limits<uint64_t>::max() ? std::string("more bytes than any file")
                                                                : std::to_string(expected) + " bytes")
            + ", has " + std::to_string(bytes.size() - start));
    at::Tensor tensor = at::empty(sizes, at::TensorOptions().dtype(type));
    if (expected > 0)
        std::memcpy(tensor.data_ptr(), bytes.data() + start, expected);
    return tensor;
}

std::map<std::string, at::Tensor> readNamedTensors(const std::string& path)
{
    if (endsWith(path, ".npz"))
        return readNpz(path);
    if (endsWith(path, ".safetensors"))
        return readSafetensors(path);
    if (endsWith(path, ".pt") || endsWith(path, ".pth")) {
        const c10::IValue saved = readTorchSaveFile(path);
        if (!saved.isGenericDict())
            throw Error(path + " holds " + saved.tagKind() + "; a dict of named tensors was expected");
        std::map<std::string, at::Tensor> tensors;
        for (const auto& entry : saved.toGenericDict())
            if (entry.key().isString() && entry.value().isTensor())
                tensors[entry.key().toStringRef()] = entry.value().toTensor();
        return tensors;
    }
    throw Error(path + ": named tensors are read from .npz (numpy.savez), .safetensors or .pt (torch.save of a dict)");
}

} // namespace torchscope
