#include "model/model_setup.h"

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/strings.h"
#include "model/file_diagnosis.h"
#include "model/model.h"
#include "preprocess/preprocessing_json.h"

#include <caffe2/serialize/inline_container.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace torchscope {
namespace {

using nlohmann::json;

std::string readText(const std::string& path, const std::string& what)
{
    // A device or a huge file is no setup or labels list (and /dev/zero would never end).
    constexpr std::uintmax_t Largest = std::uintmax_t{64} << 20;
    std::error_code ec;
    if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
        throw Error("cannot read " + what + " '" + path + "': it is not a regular file");
    if (const auto size = std::filesystem::file_size(path, ec); !ec && size > Largest)
        throw Error("cannot read " + what + " '" + path + "': " + std::to_string(size >> 20)
            + " MiB is too large for a JSON or text file");
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw Error("cannot read " + what + " '" + path + "'");
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

std::vector<std::string> labelsFrom(const json& value, const std::string& where)
{
    if (!value.is_array())
        throw Error(where + ": 'labels' must be a list of strings");
    std::vector<std::string> labels;
    for (const auto& v : value) {
        if (!v.is_string())
            throw Error(where + ": 'labels' must be a list of strings, but holds " + v.dump());
        labels.push_back(v.get<std::string>());
    }
    return labels;
}

} // namespace

ModelSetup ModelSetup::fromJson(const std::string& text, const ModelSetup& base)
{
    const json object = parseJson(text, "the model setup");
    if (!object.is_object())
        throw Error("the model setup must be a JSON object, not " + std::string(object.type_name()));
    ModelSetup setup = base;
    const bool isSetup = object.contains("preprocess") || object.contains("labels") || object.contains("scores");
    if (!isSetup) {
        setup.preprocessing = preprocessingFromObject(object);
        return setup;
    }
    json other = json::object();
    for (const auto& item : object.items())
        if (item.key() != "preprocess" && item.key() != "labels" && item.key() != "scores")
            other[item.key()] = item.value();
    if (!other.empty())
        setup.otherFields = other.dump();
    if (object.contains("preprocess"))
        setup.preprocessing = preprocessingFromObject(object["preprocess"]);
    if (object.contains("labels"))
        setup.labels = labelsFrom(object["labels"], "the model setup");
    if (object.contains("scores")) {
        const auto& scores = object["scores"];
        if (scores.is_number_unsigned())
            setup.scores = std::to_string(scores.get<unsigned>());
        else if (scores.is_string())
            setup.scores = scores.get<std::string>();
        else
            throw Error("the model setup's 'scores' must be an element name or index");
    }
    return setup;
}

ModelSetup ModelSetup::fromJson(const std::string& text)
{
    return fromJson(text, ModelSetup());
}

std::string ModelSetup::toJson() const
{
    json object = otherFields.empty() ? json::object() : json::parse(otherFields);
    object["preprocess"] = preprocessingToObject(preprocessing);
    object["labels"] = labels;
    object["scores"] = scores;
    return object.dump(2);
}

std::string ModelSetup::describe() const
{
    std::string text = preprocessing.describe();
    text += labels.empty() ? " · no labels" : " · " + std::to_string(labels.size()) + " labels";
    if (!scores.empty())
        text += " · scores: " + scores;
    return text;
}

bool ModelSetup::operator==(const ModelSetup& other) const
{
    return preprocessing == other.preprocessing && labels == other.labels && scores == other.scores;
}

std::optional<ModelSetup> storedSetup(const Model& model)
{
    const std::string card = model.extraFile("torchscope.json");
    if (card.empty())
        return std::nullopt;
    try {
        return ModelSetup::fromJson(card);
    } catch (const Error& e) {
        throw Error("the model's torchscope.json is malformed: " + std::string(e.what()));
    }
}

ModelSetup defaultSetup(const Model& model)
{
    if (auto stored = storedSetup(model))
        return *stored;
    return {};
}

std::vector<std::string> readLabelsFile(const std::string& path)
{
    const std::string text = readText(path, "the labels file");
    const auto start = text.find_first_not_of(" \t\r\n");
    if (start != std::string::npos && (text[start] == '[' || text[start] == '{')) {
        const json value = parseJson(text, "the labels file '" + path + "'");
        if (value.is_object()) {
            if (!value.contains("labels"))
                throw Error("the labels file '" + path + "' is a JSON object without a \"labels\" list");
            return labelsFrom(value["labels"], "the labels file '" + path + "'");
        }
        return labelsFrom(value, "the labels file '" + path + "'");
    }
    if (text.find('\0') != std::string::npos)
        throw Error("the labels file '" + path + "' is " + describeFileStart(text.substr(0, 64))
            + ", not text with one label per line");
    std::vector<std::string> labels;
    for (std::string line : split(text, '\n')) {
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        labels.push_back(line);
    }
    while (!labels.empty() && labels.back().empty())
        labels.pop_back();
    if (labels.empty())
        throw Error("the labels file '" + path + "' is empty");
    return labels;
}

ModelSetup readSetupSpec(const std::string& spec, const ModelSetup& base)
{
    ModelSetup setup = base;
    if (spec == "none" || spec == "imagenet") {
        setup.preprocessing = Preprocessing::fromSpec(spec);
        return setup;
    }
    std::ifstream in(spec);
    if (!in)
        throw Error("the setup '" + spec + "' is neither 'none', 'imagenet' nor a readable JSON file");
    return ModelSetup::fromJson(readText(spec, "the setup"), base);
}

void writeModelWithSetup(const std::string& modelPath, const std::string& outPath, const ModelSetup& setup)
{
    if (auto problem = diagnoseModelFile(modelPath))
        throw Error("cannot copy model '" + modelPath + "': " + *problem);
    std::string archive;
    try {
        caffe2::serialize::PyTorchStreamReader reader(modelPath);
        caffe2::serialize::PyTorchStreamWriter writer([&archive](const void* data, size_t size) {
            archive.append(static_cast<const char*>(data), size);
            return size;
        });
        const std::string card = "extra/torchscope.json";
        for (const auto& name : reader.getAllRecords()) {
            if (name == card)
                continue;
            const auto [data, size] = reader.getRecord(name);
            writer.writeRecord(name, data.get(), size);
        }
        const std::string json = setup.toJson();
        writer.writeRecord(card, json.data(), json.size());
        writer.writeEndOfFile();
    } catch (const c10::Error& e) {
        throw Error("cannot copy model '" + modelPath + "': " + e.what_without_backtrace());
    }
    writeFileAtomically(outPath, archive);
}

} // namespace torchscope
