#include "inputs.h"

#include "common/error.h"
#include "common/strings.h"
#include "export/pt_export.h"
#include "graph/engine.h"
#include "model/model.h"

#include "image_inputs.h"

#include <iostream>

namespace torchscope::cli {

namespace {

// "a dict (keys: samples, labels)", "a list of 3", or the TorchScript type.
std::string describeSaved(const c10::IValue& value)
{
    if (value.isGenericDict()) {
        std::string keys;
        for (const auto& entry : value.toGenericDict())
            keys += (keys.empty() ? "" : ", ")
                + (entry.key().isString() ? entry.key().toStringRef() : entry.key().type()->annotation_str());
        return "a dict (keys: " + keys + ")";
    }
    if (value.isList())
        return "a list of " + std::to_string(value.toListRef().size());
    if (value.isTuple())
        return "a tuple of " + std::to_string(value.toTupleRef().elements().size());
    return value.type()->annotation_str();
}

} // namespace

bool isTensorFile(const std::string& path)
{
    return endsWith(path, ".pt") || endsWith(path, ".pth");
}

ForwardInputs loadForwardInputs(
    const Model& model, const std::vector<std::string>& inputs, const Preprocessing& preprocessing)
{
    const bool allTensors = std::all_of(inputs.begin(), inputs.end(), isTensorFile);
    if (allTensors) {
        std::vector<c10::IValue> values;
        for (const auto& path : inputs)
            values.push_back(readTorchSaveFile(path));
        const auto& arguments = model.forwardArguments();
        for (size_t i = 0; i < values.size(); ++i) {
            const std::string wanted = i < arguments.size() ? arguments[i].type : "";
            if (values[i].isTensor() || wanted.rfind("Dict", 0) == 0 || wanted.rfind("List", 0) == 0)
                continue;
            // record's and probe's {"samples", "labels", "classes"} file: run takes its samples.
            if (values[i].isGenericDict() && values[i].toGenericDict().contains("samples")
                && values[i].toGenericDict().at("samples").isTensor()) {
                values[i] = values[i].toGenericDict().at("samples");
                std::cerr << "torchscope-cli: note: '" << inputs[i] << "' is a {\"samples\", ...} dict; run takes its "
                          << "samples " << shapeToString(values[i].toTensor().sizes().vec())
                          << " (labels are for record "
                          << "and probe)\n";
                continue;
            }
            throw Error("--input '" + inputs[i] + "' holds " + describeSaved(values[i])
                + ", not a tensor; the model's forward takes " + (wanted.empty() ? "no argument there" : wanted) + " ("
                + model.forwardSignature() + "). Save the input batch with torch.save(tensor, path)");
        }
        if (values.size() == 1 && values[0].isTensor())
            return {forwardInputsFromBatch(model, values[0].toTensor()), {}};
        return {values, {}};
    }
    if (std::any_of(inputs.begin(), inputs.end(), isTensorFile))
        throw Error("--input mixes tensor files and images; give either tensors or images");

    std::vector<std::string> images;
    const at::Tensor batch = loadImageInputs(inputs, preprocessing, images);
    return {forwardInputsFromBatch(model, batch), images};
}

} // namespace torchscope::cli
