#include "export/array_files.h"

#include "common/atomic_file.h"
#include "common/error.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>
#include <zip.h>

#include <cstring>

namespace torchscope {
namespace {

// Tensors of types NumPy lacks (bfloat16, complex) are written as float32.
std::pair<at::Tensor, ArrayDtype> portable(const at::Tensor& input)
{
    at::Tensor t = input.detach().cpu().contiguous();
    for (const ArrayDtype& dtype : arrayDtypes())
        if (dtype.type == t.scalar_type() && dtype.numpy)
            return {t, dtype};
    return {t.to(at::kFloat).contiguous(), arrayDtypeOf(at::kFloat)};
}

std::string rawBytes(const at::Tensor& t)
{
    return std::string(static_cast<const char*>(t.data_ptr()), t.numel() * t.element_size());
}

} // namespace

const std::vector<ArrayDtype>& arrayDtypes()
{
    static const std::vector<ArrayDtype> dtypes{{at::kBool, "|b1", "BOOL"}, {at::kByte, "|u1", "U8"},
        {at::kChar, "|i1", "I8"}, {at::kShort, "<i2", "I16"}, {at::kInt, "<i4", "I32"}, {at::kLong, "<i8", "I64"},
        {at::kHalf, "<f2", "F16"}, {at::kBFloat16, nullptr, "BF16"}, {at::kFloat, "<f4", "F32"},
        {at::kDouble, "<f8", "F64"}};
    return dtypes;
}

ArrayDtype arrayDtypeOf(at::ScalarType type)
{
    for (const ArrayDtype& dtype : arrayDtypes())
        if (dtype.type == type)
            return dtype;
    throw Error(std::string("no .npy or safetensors dtype for ") + c10::toString(type));
}

std::string encodeNpy(const at::Tensor& input)
{
    const auto [t, type] = portable(input);
    std::string shape = "(";
    for (int64_t d = 0; d < t.dim(); ++d)
        shape += std::to_string(t.size(d)) + (t.dim() == 1 ? "," : d + 1 < t.dim() ? ", " : "");
    shape += ")";
    std::string header
        = std::string("{'descr': '") + type.numpy + "', 'fortran_order': False, 'shape': " + shape + ", }";
    // Magic (6) + version (2) + length (2) + header, padded with spaces to a multiple of 64, ending in \n.
    const size_t total = 10 + header.size() + 1;
    header += std::string((64 - total % 64) % 64, ' ') + "\n";
    std::string bytes("\x93NUMPY\x01\x00", 8); // the 0 would end a plain literal
    bytes += static_cast<char>(header.size() & 0xff);
    bytes += static_cast<char>((header.size() >> 8) & 0xff);
    return bytes + header + rawBytes(t);
}

void writeNpz(const std::string& path, const NamedTensors& tensors)
{
    if (tensors.empty()) {
        // libzip writes no file for an archive without entries; numpy.savez() of nothing is the
        // end-of-central-directory record alone.
        writeFileAtomically(path, std::string("PK\x05\x06", 4) + std::string(18, '\0'));
        return;
    }
    std::vector<std::string> files; // must outlive zip_close, which reads the buffers
    for (const auto& entry : tensors)
        files.push_back(encodeNpy(entry.second));
    replaceFileAtomically(path, [&](const std::string& temp) {
        int error = 0;
        zip_t* archive = zip_open(temp.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &error);
        if (!archive)
            throw Error("cannot create the zip archive (libzip error " + std::to_string(error) + ")");
        for (size_t i = 0; i < tensors.size(); ++i) {
            zip_source_t* source = zip_source_buffer(archive, files[i].data(), files[i].size(), 0);
            const zip_int64_t index = source ? zip_file_add(archive, (tensors[i].first + ".npy").c_str(), source,
                                          ZIP_FL_ENC_UTF_8 | ZIP_FL_OVERWRITE)
                                             : -1;
            if (index < 0) {
                if (source)
                    zip_source_free(source);
                const std::string why = zip_strerror(archive);
                zip_discard(archive);
                throw Error("cannot add '" + tensors[i].first + "' to the archive: " + why);
            }
            zip_set_file_compression(archive, static_cast<zip_uint64_t>(index), ZIP_CM_STORE, 0);
        }
        if (zip_close(archive) != 0) {
            const std::string why = zip_strerror(archive);
            zip_discard(archive);
            throw Error("cannot write the zip archive: " + why);
        }
    });
}

void writeSafetensors(const std::string& path, const NamedTensors& tensors, const std::string& manifest)
{
    nlohmann::ordered_json header;
    header["__metadata__"] = {{"format", "pt"}, {"writer", "TorchScope"}};
    if (!manifest.empty()) // safetensors metadata is a map of strings: the manifest as its JSON text
        header["__metadata__"]["torchscope_manifest"] = manifest;
    std::string data;
    for (const auto& [key, tensor] : tensors) {
        const auto [t, type] = portable(tensor);
        const size_t begin = data.size();
        data += rawBytes(t);
        header[key] = {{"dtype", type.safetensors}, {"shape", t.sizes().vec()}, {"data_offsets", {begin, data.size()}}};
    }
    std::string json = header.dump();
    json += std::string((8 - json.size() % 8) % 8, ' '); // keeps the data 8-byte aligned
    std::string bytes(8, '\0');
    uint64_t size = json.size();
    for (int i = 0; i < 8; ++i)
        bytes[static_cast<size_t>(i)] = static_cast<char>((size >> (8 * i)) & 0xff);
    writeFileAtomically(path, bytes + json + data);
}

} // namespace torchscope
