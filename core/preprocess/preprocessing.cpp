#include "preprocess/preprocessing.h"

#include "common/error.h"
#include "preprocess/preprocessing_json.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <tuple>

namespace torchscope {
namespace {

using nlohmann::json;

const std::vector<double> imagenetMean{0.485, 0.456, 0.406};
const std::vector<double> imagenetStd{0.229, 0.224, 0.225};

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

// An integer >= 0 (0: keep the size), or [height, width]: both positive or both 0; at most 65536 pixels.
std::pair<int, int> size(const json& value, const char* field)
{
    constexpr int64_t Largest = 65536;
    auto number = [&](const json& v) {
        if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > Largest)
            throw Error(std::string("preprocessing field '") + field
                + "' must be an integer from 0 to 65536 or [height, width]");
        return static_cast<int>(v.get<int64_t>());
    };
    if (value.is_array()) {
        if (value.size() != 2)
            throw Error(std::string("preprocessing field '") + field + "' must be an integer or [height, width]");
        const std::pair<int, int> hw{number(value[0]), number(value[1])};
        if ((hw.first == 0) != (hw.second == 0))
            throw Error(std::string("preprocessing field '") + field + "' is [" + std::to_string(hw.first) + ", "
                + std::to_string(hw.second)
                + "]: a height and a width must both be positive (or both 0: keep the size)");
        return hw;
    }
    const int n = number(value);
    return {n, n};
}

bool close(const std::vector<double>& a, const std::vector<double>& b, double scale)
{
    if (a.size() != b.size())
        return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (std::abs(a[i] - b[i] * scale) > 1e-3 * scale)
            return false;
    return true;
}

std::string numberText(double v)
{
    std::ostringstream out;
    out << v;
    return out.str();
}

std::string listText(const std::vector<double>& values)
{
    std::string text = "[";
    for (size_t i = 0; i < values.size(); ++i)
        text += (i ? ", " : "") + numberText(values[i]);
    return text + "]";
}

} // namespace

Preprocessing preprocessingFromObject(const json& object)
{
    if (!object.is_object())
        throw Error("preprocessing must be a JSON object");
    for (const auto& item : object.items()) {
        static const std::vector<std::string> known{
            "resize", "crop", "grayscale", "scale", "channel_order", "mean", "std"};
        if (std::find(known.begin(), known.end(), item.key()) == known.end())
            throw Error("preprocessing has an unknown field '" + item.key()
                + "' (known: resize, crop, grayscale, scale, channel_order, mean, std)");
    }
    Preprocessing p;
    if (object.contains("resize")) {
        if (object["resize"].is_array())
            std::tie(p.resizeHeight, p.resizeWidth) = size(object["resize"], "resize");
        else
            p.resize = size(object["resize"], "resize").first;
    }
    if (object.contains("crop"))
        std::tie(p.cropHeight, p.cropWidth) = size(object["crop"], "crop");
    if (object.contains("grayscale")) {
        if (!object["grayscale"].is_boolean())
            throw Error("preprocessing field 'grayscale' must be true or false");
        p.grayscale = object["grayscale"].get<bool>();
    }
    if (object.contains("scale")) {
        if (!object["scale"].is_number() || object["scale"].get<double>() <= 0)
            throw Error("preprocessing field 'scale' must be a positive number (1 for values in 0..1, 255 for 0..255)");
        p.scale = object["scale"].get<double>();
    }
    if (object.contains("channel_order")) {
        const std::string order = object["channel_order"].is_string() ? object["channel_order"].get<std::string>() : "";
        if (order != "RGB" && order != "BGR")
            throw Error("preprocessing field 'channel_order' must be \"RGB\" or \"BGR\"");
        p.bgr = order == "BGR";
    }
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

json preprocessingToObject(const Preprocessing& p)
{
    json object = json::object();
    if (p.resizeHeight > 0 && p.resizeWidth > 0)
        object["resize"] = {p.resizeHeight, p.resizeWidth};
    else
        object["resize"] = p.resize;
    object["crop"] = {p.cropHeight, p.cropWidth};
    object["grayscale"] = p.grayscale;
    object["scale"] = p.scale;
    object["channel_order"] = p.bgr ? "BGR" : "RGB";
    object["mean"] = p.mean;
    object["std"] = p.std;
    return object;
}

json parseJson(const std::string& text, const std::string& what)
{
    try {
        return json::parse(text);
    } catch (const json::exception& e) {
        throw Error(what + " is not valid JSON: " + e.what());
    }
}

Preprocessing Preprocessing::imagenet()
{
    Preprocessing p;
    p.resize = 256;
    p.cropHeight = p.cropWidth = 224;
    p.mean = imagenetMean;
    p.std = imagenetStd;
    return p;
}

Preprocessing Preprocessing::fromJson(const std::string& text)
{
    const json object = parseJson(text, "the preprocessing");
    try {
        return preprocessingFromObject(object.contains("preprocess") ? object["preprocess"] : object);
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
    return preprocessingToObject(*this).dump();
}

int Preprocessing::outputHeight() const
{
    return cropHeight > 0 ? cropHeight : resizeHeight > 0 ? resizeHeight : 0;
}

int Preprocessing::outputWidth() const
{
    return cropWidth > 0 ? cropWidth : resizeWidth > 0 ? resizeWidth : 0;
}

std::string Preprocessing::describe() const
{
    std::string size;
    const std::string crop = std::to_string(cropHeight) + "×" + std::to_string(cropWidth);
    if (resizeHeight > 0 && resizeWidth > 0) {
        size = std::to_string(resizeHeight) + "×" + std::to_string(resizeWidth) + " (stretched)";
        if (cropHeight > 0 && (cropHeight != resizeHeight || cropWidth != resizeWidth))
            size += ", " + crop + " centre crop";
    } else if (cropHeight > 0) {
        size = crop + (resize > 0 ? " (shorter side " + std::to_string(resize) + ", centre crop)" : " centre crop");
    } else {
        size = resize > 0 ? "shorter side " + std::to_string(resize) : "image size";
    }
    std::string values;
    switch (valuePresetOf(*this)) {
    case ValuePreset::ImageNet:
        values = "0..1, ImageNet mean/std";
        break;
    case ValuePreset::ZeroToOne:
        values = "0..1";
        break;
    case ValuePreset::ZeroTo255:
        values = "0..255";
        break;
    case ValuePreset::MinusOneToOne:
        values = "-1..1";
        break;
    case ValuePreset::Custom:
        values = "0.." + numberText(scale) + (mean.empty() ? "" : ", mean " + listText(mean) + " std " + listText(std));
        break;
    }
    return size + " · " + (grayscale ? "grey" : bgr ? "BGR" : "RGB") + " · " + values;
}

bool Preprocessing::operator==(const Preprocessing& o) const
{
    return resize == o.resize && resizeHeight == o.resizeHeight && resizeWidth == o.resizeWidth
        && cropHeight == o.cropHeight && cropWidth == o.cropWidth && grayscale == o.grayscale && scale == o.scale
        && bgr == o.bgr && mean == o.mean && std == o.std;
}

ValuePreset valuePresetOf(const Preprocessing& p)
{
    if (p.mean.empty() && p.scale == 1.0)
        return ValuePreset::ZeroToOne;
    if (p.mean.empty() && p.scale == 255.0)
        return ValuePreset::ZeroTo255;
    const size_t channels = p.mean.size();
    if (p.scale == 1.0 && channels == 3 && close(p.mean, imagenetMean, 1) && close(p.std, imagenetStd, 1))
        return ValuePreset::ImageNet;
    if (p.scale == 1.0 && channels > 0 && close(p.mean, std::vector<double>(channels, 0.5), 1)
        && close(p.std, std::vector<double>(channels, 0.5), 1))
        return ValuePreset::MinusOneToOne;
    return ValuePreset::Custom;
}

void applyValuePreset(Preprocessing& p, ValuePreset preset)
{
    const size_t channels = p.grayscale ? 1 : 3;
    switch (preset) {
    case ValuePreset::ImageNet:
        p.scale = 1.0;
        p.mean = p.grayscale ? std::vector<double>{0.449} : imagenetMean;
        p.std = p.grayscale ? std::vector<double>{0.226} : imagenetStd;
        break;
    case ValuePreset::ZeroToOne:
    case ValuePreset::ZeroTo255:
        p.scale = preset == ValuePreset::ZeroTo255 ? 255.0 : 1.0;
        p.mean.clear();
        p.std.clear();
        break;
    case ValuePreset::MinusOneToOne:
        p.scale = 1.0;
        p.mean.assign(channels, 0.5);
        p.std.assign(channels, 0.5);
        break;
    case ValuePreset::Custom:
        break;
    }
}

} // namespace torchscope
