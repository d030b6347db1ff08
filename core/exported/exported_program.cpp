#include "exported/exported_program.h"

#include "common/error.h"
#include "common/strings.h"
#include "exported/graph_rewrites.h"

#include <ATen/ATen.h>
#include <torch/version.h>

#include <algorithm>
#include <cstring>

namespace torchscope {

namespace ex = torch::_export;

c10::ScalarType toScalarType(ex::ScalarType type)
{
    switch (type) {
    case ex::ScalarType::BYTE:
        return c10::kByte;
    case ex::ScalarType::CHAR:
        return c10::kChar;
    case ex::ScalarType::SHORT:
        return c10::kShort;
    case ex::ScalarType::INT:
        return c10::kInt;
    case ex::ScalarType::LONG:
        return c10::kLong;
    case ex::ScalarType::HALF:
        return c10::kHalf;
    case ex::ScalarType::FLOAT:
        return c10::kFloat;
    case ex::ScalarType::DOUBLE:
        return c10::kDouble;
    case ex::ScalarType::COMPLEXHALF:
        return c10::kComplexHalf;
    case ex::ScalarType::COMPLEXFLOAT:
        return c10::kComplexFloat;
    case ex::ScalarType::COMPLEXDOUBLE:
        return c10::kComplexDouble;
    case ex::ScalarType::BOOL:
        return c10::kBool;
    case ex::ScalarType::BFLOAT16:
        return c10::kBFloat16;
    case ex::ScalarType::UINT16:
        return c10::kUInt16;
    case ex::ScalarType::UINT32:
        return c10::kUInt32;
    case ex::ScalarType::UINT64:
        return c10::kUInt64;
    case ex::ScalarType::FLOAT8E4M3FN:
        return c10::ScalarType::Float8_e4m3fn;
    case ex::ScalarType::FLOAT8E5M2:
        return c10::ScalarType::Float8_e5m2;
    case ex::ScalarType::FLOAT8E4M3FNUZ:
        return c10::ScalarType::Float8_e4m3fnuz;
    case ex::ScalarType::FLOAT8E5M2FNUZ:
        return c10::ScalarType::Float8_e5m2fnuz;
    case ex::ScalarType::FLOAT8E8M0FNU:
        return c10::ScalarType::Float8_e8m0fnu;
    default:
        break;
    }
    throw Error("the program uses dtype number " + std::to_string(static_cast<int>(type))
        + " of the export schema, which TorchScope does not know");
}

c10::MemoryFormat toMemoryFormat(ex::MemoryFormat format)
{
    switch (format) {
    case ex::MemoryFormat::ContiguousFormat:
        return c10::MemoryFormat::Contiguous;
    case ex::MemoryFormat::ChannelsLast:
        return c10::MemoryFormat::ChannelsLast;
    case ex::MemoryFormat::ChannelsLast3d:
        return c10::MemoryFormat::ChannelsLast3d;
    case ex::MemoryFormat::PreserveFormat:
        return c10::MemoryFormat::Preserve;
    default:
        break;
    }
    throw Error("the program uses an unknown memory format (" + std::to_string(static_cast<int>(format)) + ")");
}

c10::Layout toLayout(ex::Layout layout)
{
    switch (layout) {
    case ex::Layout::Strided:
        return c10::kStrided;
    case ex::Layout::SparseCoo:
        return c10::kSparse;
    case ex::Layout::SparseCsr:
        return c10::kSparseCsr;
    case ex::Layout::SparseCsc:
        return c10::kSparseCsc;
    case ex::Layout::SparseBsr:
        return c10::kSparseBsr;
    case ex::Layout::SparseBsc:
        return c10::kSparseBsc;
    case ex::Layout::_mkldnn:
        return c10::kMkldnn;
    default:
        break;
    }
    throw Error("the program uses an unknown tensor layout (" + std::to_string(static_cast<int>(layout)) + ")");
}

c10::Device toDevice(const ex::Device& device)
{
    try {
        c10::Device result(device.get_type());
        if (device.get_index())
            result.set_index(static_cast<c10::DeviceIndex>(*device.get_index()));
        return result;
    } catch (const c10::Error&) {
        throw Error("the program names a device '" + device.get_type() + "' that this LibTorch does not know");
    }
}

namespace {

int64_t concrete(const ex::SymInt& value, const std::string& what)
{
    if (value.tag() != ex::SymInt::Tag::AS_INT)
        throw Error(what + " has a symbolic size in the archive's weight metadata");
    return value.get_as_int();
}

nlohmann::json parseArchiveJson(const std::string& text, const std::string& record)
{
    auto json = nlohmann::json::parse(text, nullptr, false);
    if (json.is_discarded())
        throw Error("the .pt2 record '" + record + "' is not valid JSON (" + std::to_string(text.size())
            + " bytes starting '" + text.substr(0, 40) + "'): the archive is damaged");
    return json;
}

// A stored tensor: raw little-endian storage bytes plus the metadata's dtype, sizes, strides, offset.
at::Tensor readTensor(const Pt2Archive& archive, const std::string& folder, const std::string& name,
    const nlohmann::json& entry, std::map<std::string, at::Tensor>& storages)
{
    if (entry.value("use_pickle", false))
        throw Error("'" + name + "' is stored pickled (a tensor subclass); TorchScope reads plain tensors only");
    const auto meta = entry.at("tensor_meta").get<ex::TensorMeta>();
    const std::string record = folder + entry.at("path_name").get<std::string>();
    const auto dtype = toScalarType(meta.get_dtype());
    std::vector<int64_t> sizes, strides;
    for (const auto& s : meta.get_sizes())
        sizes.push_back(concrete(s, "'" + name + "'"));
    for (const auto& s : meta.get_strides())
        strides.push_back(concrete(s, "'" + name + "'"));
    const int64_t offset = concrete(meta.get_storage_offset(), "'" + name + "'");
    if (sizes.size() != strides.size())
        throw Error("'" + name + "' has " + std::to_string(sizes.size()) + " sizes but "
            + std::to_string(strides.size()) + " strides in the archive's metadata");
    // The elements the view reaches, with every step checked: sizes from a damaged file must not
    // overflow into a small number and let the view read past the stored bytes.
    int64_t needed = 0;
    bool overflow = offset < 0 || __builtin_add_overflow(offset, int64_t{1}, &needed);
    for (size_t d = 0; d < sizes.size() && !overflow; ++d) {
        if (sizes[d] < 0 || strides[d] < 0)
            throw Error("'" + name + "' has a negative size or stride in the archive's metadata");
        int64_t reach = 0;
        overflow = sizes[d] > 0
            && (__builtin_mul_overflow(sizes[d] - 1, strides[d], &reach)
                || __builtin_add_overflow(needed, reach, &needed));
    }
    if (overflow)
        throw Error(
            "'" + name + "' has sizes, strides or an offset too large for any tensor in the archive's metadata");
    for (const int64_t size : sizes)
        if (size == 0)
            needed = 0;
    auto stored = storages.find(record);
    if (stored == storages.end()) {
        if (!archive.has(record))
            throw Error(
                "the .pt2 archive lacks the record '" + record + "' holding '" + name + "': the file is incomplete");
        const std::string bytes = archive.read(record);
        const auto itemSize = static_cast<int64_t>(c10::elementSize(dtype));
        auto storage = at::empty({static_cast<int64_t>(bytes.size()) / itemSize}, at::TensorOptions().dtype(dtype));
        if (storage.numel() > 0) // an empty tensor's data pointer may be null
            std::memcpy(storage.data_ptr(), bytes.data(), static_cast<size_t>(storage.numel() * itemSize));
        stored = storages.emplace(record, storage).first;
    }
    const auto& storage = stored->second;
    if (storage.scalar_type() != dtype || storage.numel() < needed)
        throw Error("'" + name + "' needs " + std::to_string(needed) + " " + c10::toString(dtype)
            + " elements, but the record '" + record + "' holds "
            + std::to_string(storage.numel() * static_cast<int64_t>(c10::elementSize(storage.scalar_type())))
            + " bytes: the archive is damaged or cut short");
    // The copy holds every element of the view: with strides of 0 a few stored bytes could declare
    // gigabytes. An expanded view (a constant broadcast over a batch) is read while its copy is no
    // larger than the whole file; beyond that it is refused before the copy is allocated.
    int64_t elements = 1;
    bool tooMany = false;
    for (const int64_t size : sizes)
        tooMany = tooMany || __builtin_mul_overflow(elements, size, &elements);
    const auto itemSize = static_cast<uint64_t>(c10::elementSize(dtype));
    if (std::find(sizes.begin(), sizes.end(), 0) == sizes.end() && elements > storage.numel()
        && (tooMany || static_cast<uint64_t>(elements) > archive.fileSize() / itemSize))
        throw Error("'" + name + "' has sizes " + shapeToString(sizes) + " over " + std::to_string(storage.numel())
            + " stored elements (strides of 0): its copy would be larger than the whole file");
    return storage.as_strided(sizes, strides, offset).clone();
}

std::map<std::string, at::Tensor> readTensors(
    const Pt2Archive& archive, const std::string& folder, const std::string& configRecord)
{
    std::map<std::string, at::Tensor> tensors;
    if (!archive.has(configRecord))
        return tensors;
    const auto config = parseArchiveJson(archive.read(configRecord), configRecord);
    std::map<std::string, at::Tensor> storages;
    try {
        for (const auto& [name, entry] : config.at("config").items())
            tensors[name] = readTensor(archive, folder, name, entry, storages);
    } catch (const nlohmann::json::exception& e) {
        throw Error(
            "the .pt2 record '" + configRecord + "' does not describe tensors as PyTorch writes them: " + e.what());
    }
    return tensors;
}

std::string chooseModel(const Pt2Archive& archive)
{
    std::vector<std::string> names;
    for (const auto& record : archive.list("models/"))
        if (endsWith(record, ".json") && record.find('/', 7) == std::string::npos)
            names.push_back(record.substr(7, record.size() - 12));
    if (names.empty())
        throw Error("the .pt2 archive holds no exported program (no models/NAME.json): it may hold only "
                    "AOTInductor-compiled code, which cannot be looked inside");
    for (const auto& name : names)
        if (name == "model")
            return name;
    return names.front();
}

} // namespace

ExportedArchive readExportedArchive(const Pt2Archive& archive, const c10::Device& device)
{
    ExportedArchive result;
    if (archive.has("byteorder") && archive.read("byteorder").rfind("little", 0) != 0)
        throw Error("the .pt2 archive was written on a big-endian machine; TorchScope reads little-endian archives");
    result.modelName = chooseModel(archive);
    const std::string record = "models/" + result.modelName + ".json";
    auto json = parseArchiveJson(archive.read(record), record);
    if (!json.is_object() || !json.contains("schema_version") || !json.contains("graph_module"))
        throw Error("the .pt2 record '" + record
            + "' is JSON but not an exported program (no schema_version and graph_module)");
    const auto major = json.at("schema_version").value("major", int64_t{-1});
    const auto minor = json.at("schema_version").value("minor", int64_t{-1});
    const std::string writer = json.value("torch_version", std::string("an unknown PyTorch"));
    if (major != kExportSchemaMajor)
        throw Error("the program was exported by PyTorch " + writer + " with export schema version "
            + std::to_string(major) + "." + std::to_string(minor) + ", but this TorchScope reads version "
            + std::to_string(kExportSchemaMajor)
            + ".x (PyTorch " TORCH_VERSION
              "): export it again with that PyTorch, or build TorchScope against the one that wrote it");
    // The generated parser leaves a missing field at its default: a program without its graph
    // would open as an empty model. The parts every program has must be there.
    const std::vector<std::pair<const char*, std::vector<const char*>>> required{
        {"graph_module", {"graph", "signature", "module_call_graph"}}};
    for (const auto& [part, keys] : required)
        for (const char* key : keys)
            if (!json.at(part).is_object() || !json.at(part).contains(key))
                throw Error("the .pt2 record '" + record + "' does not follow the export schema: " + part + " has no '"
                    + key + "'");
    const auto& graph = json.at("graph_module").at("graph");
    for (const char* key : {"inputs", "outputs", "nodes"})
        if (!graph.is_object() || !graph.contains(key) || !graph.at(key).is_array())
            throw Error("the .pt2 record '" + record + "' does not follow the export schema: its graph has no '" + key
                + "' list");
    try {
        inlineWrappedRegions(json.at("graph_module").at("graph"));
        readThroughEvalDropouts(json.at("graph_module").at("graph"));
        result.program = json.get<ex::ExportedProgram>();
    } catch (const nlohmann::json::exception& e) {
        throw Error("the .pt2 record '" + record + "' (schema " + std::to_string(major) + "." + std::to_string(minor)
            + ", PyTorch " + writer + ") does not follow the export schema: " + e.what());
    }

    const auto weights
        = readTensors(archive, "data/weights/", "data/weights/" + result.modelName + "_weights_config.json");
    const auto constants
        = readTensors(archive, "data/constants/", "data/constants/" + result.modelName + "_constants_config.json");
    auto find = [&](const std::map<std::string, at::Tensor>& from, const std::string& fqn, const char* what) {
        const auto it = from.find(fqn);
        if (it == from.end())
            throw Error(std::string("the program uses the ") + what + " '" + fqn
                + "', but the .pt2 archive does not store it: the file is incomplete");
        return it->second;
    };
    const auto& signature = result.program.get_graph_module().get_signature();
    for (const auto& spec : signature.get_input_specs()) {
        using Tag = ex::InputSpec::Tag;
        ExportedState state;
        std::string name;
        switch (spec.tag()) {
        case Tag::PARAMETER:
            name = spec.get_parameter().get_arg().get_name();
            state.fqn = spec.get_parameter().get_parameter_name();
            state.tensor = find(weights, state.fqn, "parameter");
            break;
        case Tag::BUFFER:
            name = spec.get_buffer().get_arg().get_name();
            state.fqn = spec.get_buffer().get_buffer_name();
            state.kind = ExportedState::Kind::Buffer;
            state.tensor = weights.count(state.fqn) ? weights.at(state.fqn) : find(constants, state.fqn, "buffer");
            break;
        case Tag::TENSOR_CONSTANT:
            name = spec.get_tensor_constant().get_arg().get_name();
            state.fqn = spec.get_tensor_constant().get_tensor_constant_name();
            state.kind = ExportedState::Kind::Constant;
            state.tensor = find(constants, state.fqn, "tensor constant");
            break;
        case Tag::CUSTOM_OBJ:
            throw Error("the program uses the script object '" + spec.get_custom_obj().get_custom_obj_name()
                + "' (a torch.classes object); TorchScope cannot open programs with script objects");
        case Tag::TOKEN:
            throw Error("the program threads effect tokens through side-effecting custom operators; "
                        "TorchScope cannot open such programs");
        default:
            continue;
        }
        state.tensor = state.tensor.to(device);
        if (state.kind == ExportedState::Kind::Parameter)
            state.tensor.requires_grad_(true);
        result.stateOrder.push_back(name);
        result.state[name] = std::move(state);
    }
    for (const auto& spec : signature.get_input_specs())
        if (spec.tag() == ex::InputSpec::Tag::USER_INPUT
            && spec.get_user_input().get_arg().tag() == ex::Argument::Tag::AS_TENSOR) {
            const auto& values = result.program.get_graph_module().get_graph().get_tensor_values();
            const auto it = values.find(spec.get_user_input().get_arg().get_as_tensor().get_name());
            if (it != values.end()) {
                result.exportDevice = toDevice(it->second.get_device());
                break;
            }
        }
    return result;
}

} // namespace torchscope
