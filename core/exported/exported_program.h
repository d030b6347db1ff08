#pragma once

// Only for core/exported/*.cpp: the schema's generated types are large (and pull in nlohmann).
#include "exported/pt2_archive.h"

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <torch/csrc/utils/generated_serialization_types.h>

#include <map>
#include <string>

namespace torchscope {

// The export schema major version this TorchScope's reader follows (torch/_export/serde/schema.py
// SCHEMA_VERSION of the PyTorch it is built with; a new major changes the JSON incompatibly).
constexpr int64_t kExportSchemaMajor = 8;

// One lifted input of the exported graph: a parameter, buffer or tensor constant, by the
// graph's name for it (p_fc_weight, b_bn1_running_mean, c_lifted_tensor_0).
struct ExportedState {
    enum class Kind { Parameter, Buffer, Constant };
    std::string fqn; // "fc.weight", "bn1.running_mean", "lifted_tensor_0"
    Kind kind = Kind::Parameter;
    at::Tensor tensor;
};

struct ExportedArchive {
    std::string modelName; // models/<name>.json
    torch::_export::ExportedProgram program;
    std::map<std::string, ExportedState> state; // by graph input name
    std::vector<std::string> stateOrder; // the graph input names in the program's order (Python's)
    c10::Device exportDevice = c10::Device("cpu"); // where the graph's device constants point
};

// Reads the program and its weights onto `device`. Throws torchscope::Error saying what is wrong
// (schema version, JSON, a missing or short weight record) with the record's name.
ExportedArchive readExportedArchive(const Pt2Archive& archive, const c10::Device& device);

// The export schema's enums as c10's.
c10::ScalarType toScalarType(torch::_export::ScalarType type);
c10::MemoryFormat toMemoryFormat(torch::_export::MemoryFormat format);
c10::Layout toLayout(torch::_export::Layout layout);
c10::Device toDevice(const torch::_export::Device& device);

} // namespace torchscope
