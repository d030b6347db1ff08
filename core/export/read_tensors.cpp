#include "export/read_tensors.h"

#include "common/error.h"
#include "common/strings.h"
#include "common/zip_archive.h"
#include "export/pt_export.h"

#include <ATen/ATen.h>

#include <cstring>
#include <memory>
#include <regex>
#include <vector>

namespace torchscope {
namespace {

at::ScalarType numpyType(const std::string& descr, const std::string& name)
{
    static const std::map<std::string, at::ScalarType> types{{"|b1", at::kBool}, {"|u1", at::kByte}, {"|i1", at::kChar},
        {"<i2", at::kShort}, {"<i4", at::kInt}, {"<i8", at::kLong}, {"<f2", at::kHalf}, {"<f4", at::kFloat},
        {"<f8", at::kDouble}};
    const auto found = types.find(descr);
    if (found == types.end())
        throw Error("array '" + name + "' has NumPy type " + descr
            + "; TorchScope reads little-endian bool, integers and floats");
    return found->second;
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
        sizes.push_back(std::stoll(it->str()));
    const at::ScalarType type = numpyType(descr[1], name);
    at::Tensor tensor = at::empty(sizes, at::TensorOptions().dtype(type));
    const size_t expected = static_cast<size_t>(tensor.numel()) * tensor.element_size();
    if (bytes.size() - start != expected)
        throw Error("array '" + name + "' should hold " + std::to_string(expected) + " bytes, has "
            + std::to_string(bytes.size() - start));
    std::memcpy(tensor.data_ptr(), bytes.data() + start, expected);
    return tensor;
}

std::map<std::string, at::Tensor> readNamedTensors(const std::string& path)
{
    if (endsWith(path, ".npz"))
        return readNpz(path);
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
    throw Error(path + ": named tensors are read from .npz (numpy.savez) or .pt (torch.save of a dict)");
}

} // namespace torchscope
