#include "imaging/preprocessing.h"

#include "common/error.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace torchscope {
namespace {

using nlohmann::json;

std::vector<double> numbers(const json& value, const char* field)
{
    if (!value.is_array())
        throw Error(std::string("preprocessing field '") + field + "' must be a list of numbers");
    std::vector<double> out;
    for (const auto& v : value) {
        if (!v.is_number())
            throw Error(std::string("preprocessing field '") + field + "' must be a list of numbers");
        out.push_back(v.get<double>());
    }
    return out;
}

Preprocessing fromObject(const json& object)
{
    if (!object.is_object())
        throw Error("preprocessing must be a JSON object");
    Preprocessing p;
    if (object.contains("resize")) {
        if (!object["resize"].is_number_integer() || object["resize"].get<int>() < 0)
            throw Error("preprocessing field 'resize' must be a non-negative integer");
        p.resize = object["resize"].get<int>();
    }
    if (object.contains("crop")) {
        const auto& crop = object["crop"];
        if (crop.is_number_integer()) {
            p.cropHeight = p.cropWidth = crop.get<int>();
        } else if (crop.is_array() && crop.size() == 2) {
            p.cropHeight = crop[0].get<int>();
            p.cropWidth = crop[1].get<int>();
        } else {
            throw Error("preprocessing field 'crop' must be an integer or [height, width]");
        }
    }
    if (object.contains("grayscale"))
        p.grayscale = object["grayscale"].get<bool>();
    if (object.contains("mean"))
        p.mean = numbers(object["mean"], "mean");
    if (object.contains("std"))
        p.std = numbers(object["std"], "std");
    if (p.mean.size() != p.std.size())
        throw Error("preprocessing has " + std::to_string(p.mean.size()) + " mean value(s) but "
            + std::to_string(p.std.size()) + " std value(s)");
    for (double s : p.std)
        if (s == 0.0)
            throw Error("preprocessing 'std' contains 0");
    return p;
}

json parse(const std::string& text, const std::string& what)
{
    try {
        return json::parse(text);
    } catch (const json::exception& e) {
        throw Error(what + " is not valid JSON: " + e.what());
    }
}

} // namespace

Preprocessing Preprocessing::imagenet()
{
    Preprocessing p;
    p.resize = 256;
    p.cropHeight = p.cropWidth = 224;
    p.mean = {0.485, 0.456, 0.406};
    p.std = {0.229, 0.224, 0.225};
    return p;
}

Preprocessing Preprocessing::fromJson(const std::string& text)
{
    const json object = parse(text, "the preprocessing");
    try {
        return fromObject(object.contains("preprocess") ? object["preprocess"] : object);
    } catch (const json::exception& e) {
        throw Error(std::string("bad preprocessing JSON: ") + e.what());
    }
}

Preprocessing Preprocessing::fromSpec(const std::string& spec)
{
    if (spec == "none")
        return none();
    if (spec == "imagenet")
        return imagenet();
    std::ifstream in(spec);
    if (!in)
        throw Error("preprocessing '" + spec + "' is neither 'none', 'imagenet' nor a readable JSON file");
    std::stringstream text;
    text << in.rdbuf();
    return fromJson(text.str());
}

std::string Preprocessing::toJson() const
{
    json object{
        {"resize", resize}, {"crop", {cropHeight, cropWidth}}, {"grayscale", grayscale}, {"mean", mean}, {"std", std}};
    return object.dump();
}

ModelCard ModelCard::fromJson(const std::string& text)
{
    ModelCard card;
    if (text.empty())
        return card;
    const json object = parse(text, "the model's torchscope.json");
    try {
        card.present = true;
        if (object.contains("preprocess"))
            card.preprocessing = fromObject(object["preprocess"]);
        if (object.contains("labels"))
            card.labels = object["labels"].get<std::vector<std::string>>();
    } catch (const json::exception& e) {
        throw Error(std::string("the model's torchscope.json is malformed: ") + e.what());
    }
    return card;
}

} // namespace torchscope
