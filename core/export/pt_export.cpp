#include "export/pt_export.h"

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/zip_archive.h"
#include "model/file_diagnosis.h"

#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/export.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/csrc/jit/serialization/pickler.h>
#include <torch/version.h>

#include <filesystem>
#include <fstream>
#include <iterator>

namespace torchscope {

namespace {

// How copyToCpu rebuilds containers: as they are typed, or as Python's own (lists and dicts of Any,
// whatever their element type, and undefined tensors as None), so that LibTorch's pickler writes no
// torch.jit._pickle globals (build_intlist, build_tensorlist, ...) for them: torch.load's default
// since PyTorch 2.6 (weights_only) refuses those globals.
enum class Containers { Typed, AsPython };

c10::IValue copyToCpu(const c10::IValue& value, Containers containers)
{
    const bool asPython = containers == Containers::AsPython;
    if (value.isTensor()) {
        // An undefined tensor is a None of Optional[Tensor] (nn.MultiheadAttention's weights with
        // need_weights=False, from its native fast path).
        if (!value.toTensor().defined())
            return asPython ? c10::IValue() : value;
        return value.toTensor().detach().cpu();
    }
    if (value.isList()) {
        c10::impl::GenericList copy(asPython ? c10::AnyType::get() : value.toList().elementType());
        for (const c10::IValue& v : value.toListRef())
            copy.push_back(copyToCpu(v, containers));
        return copy;
    }
    if (value.isTuple()) {
        std::vector<c10::IValue> elements;
        for (const auto& v : value.toTupleRef().elements())
            elements.push_back(copyToCpu(v, containers));
        return c10::ivalue::Tuple::create(std::move(elements));
    }
    if (value.isGenericDict()) {
        const auto dict = value.toGenericDict();
        c10::impl::GenericDict copy(
            asPython ? c10::AnyType::get() : dict.keyType(), asPython ? c10::AnyType::get() : dict.valueType());
        for (const auto& entry : dict)
            copy.insert(entry.key(), copyToCpu(entry.value(), containers));
        return copy;
    }
    return value;
}

// torch::jit::pickle_save, with the pickler's type tags (torch.jit._pickle.restore_type_tag)
// turned off: the archive torch.save writes, with only globals torch.load(weights_only=True) takes.
std::vector<char> pickleForTorchLoad(const c10::IValue& value)
{
    std::vector<char> pickled;
    torch::jit::Pickler pickler(
        [&](const char* bytes, size_t size) { pickled.insert(pickled.end(), bytes, bytes + size); }, nullptr, nullptr,
        nullptr, nullptr, /*tag_aggregates=*/false);
    pickler.protocol();
    pickler.pushIValue(value);
    pickler.stop();

    std::vector<char> archive;
    caffe2::serialize::PyTorchStreamWriter writer([&](const void* bytes, size_t size) {
        const char* begin = static_cast<const char*>(bytes);
        archive.insert(archive.end(), begin, begin + size);
        return size;
    });
    torch::jit::writeArchiveAndTensors("data", pickled.data(), pickled.size(), pickler.tensorData(), writer);
    writer.writeEndOfFile();
    return archive;
}

} // namespace

c10::IValue toCpu(const c10::IValue& value)
{
    return copyToCpu(value, Containers::Typed);
}

void writePtDictionary(const std::string& path, const std::vector<std::pair<std::string, c10::IValue>>& values)
{
    c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
    for (const auto& [key, value] : values)
        dict.insert(key, copyToCpu(value, Containers::AsPython));
    const std::vector<char> bytes = pickleForTorchLoad(dict);
    writeFileAtomically(path, std::string_view(bytes.data(), bytes.size()));
}

c10::IValue readTorchSaveFile(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw Error("cannot read '" + path + "': no such file or not readable");
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string start(bytes.data(), std::min<size_t>(bytes.size(), 64));
    if (bytes.size() < 4 || start.compare(0, 4, "PK\x03\x04") != 0)
        throw Error("cannot read tensor file '" + path + "': this is " + describeFileStart(start)
            + ", not a file written by torch.save");
    // LibTorch's reader trusts the zip's offsets and sizes: a truncated or damaged archive is refused
    // here first, every record held against the central directory and the file's end.
    try {
        ZipArchive(path, "torch.save file", ZipArchive::Check::Consistent);
    } catch (const ZipOpenError& e) {
        throw Error("cannot read tensor file '" + path + "': its zip archive is damaged or cut short (" + e.reason
            + "); a file torch.save wrote whole opens");
    }
    try {
        return torch::jit::pickle_load(bytes);
    } catch (const c10::Error& e) {
        const std::string message = e.what_without_backtrace();
        if (message.find("constants.pkl") != std::string::npos || message.find("code/") != std::string::npos)
            throw Error("cannot read tensor file '" + path + "': it looks like a TorchScript model, not a tensor");
        if (message.find("Unknown opcode for unpickling at 0x73") != std::string::npos) // SETITEM
            throw Error("cannot read tensor file '" + path
                + "': LibTorch " TORCH_VERSION " cannot read a dict with a "
                  "single entry saved by torch.save (Python pickles it with an opcode LibTorch lacks); save the tensor "
                  "itself, or a dict of two or more entries");
        throw Error("cannot read tensor file '" + path + "': " + message.substr(0, message.find('\n')));
    }
}

} // namespace torchscope
