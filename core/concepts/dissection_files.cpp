// writeDissection (dissection.h): the result as JSON or CSV.
#include "common/atomic_file.h"
#include "common/error.h"
#include "common/strings.h"
#include "concepts/dissection.h"
#include "export/manifest.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <sstream>

namespace torchscope {

namespace {

// NaN and infinities as JSON null.
nlohmann::json jsonNumber(double value)
{
    return std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(nullptr);
}

std::string csvField(const std::string& text)
{
    if (text.find_first_of(",\"\n") == std::string::npos)
        return text;
    std::string quoted = "\"";
    for (const char c : text)
        quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    return quoted + "\"";
}

std::string csvNumber(double value)
{
    if (!std::isfinite(value))
        return "";
    std::ostringstream out;
    out.precision(10);
    out << value;
    return out.str();
}

std::string categoryOf(const DissectionResult& result, const UnitConcept& entry)
{
    return entry.conceptId >= 0 ? result.conceptCategories[static_cast<size_t>(entry.conceptId)] : "formula";
}

nlohmann::json mapRows(const FloatTensor& map)
{
    nlohmann::json rows = nlohmann::json::array();
    const int64_t width = map.shape.size() == 2 ? map.shape[1] : 1;
    for (size_t r = 0; r * static_cast<size_t>(width) < map.values.size(); ++r)
        rows.push_back(std::vector<float>(map.values.begin() + static_cast<int64_t>(r) * width,
            map.values.begin() + static_cast<int64_t>(r + 1) * width));
    return rows;
}

std::string json(const DissectionResult& result)
{
    nlohmann::json layers = nlohmann::json::array();
    for (const auto& layer : result.layers) {
        nlohmann::json units = nlohmann::json::array();
        for (const auto& unit : layer.unitResults) {
            nlohmann::json entry = {{"unit", unit.unit}};
            if (unit.unit < static_cast<int64_t>(layer.unitNames.size()))
                entry["name"] = layer.unitNames[static_cast<size_t>(unit.unit)];
            if (result.method != DissectionMethod::Invert && !unit.iou.empty()) {
                nlohmann::json iou = nlohmann::json::array();
                for (const auto& c : unit.iou)
                    iou.push_back({{"concept", c.label}, {"category", categoryOf(result, c)},
                        {"iou", jsonNumber(c.score)}, {"intersection", c.intersection}, {"unit_pixels", c.unitArea},
                        {"concept_pixels", c.conceptArea}});
                entry["threshold"] = jsonNumber(unit.threshold);
                entry["iou"] = iou;
                entry["interpretable_iou"] = unit.interpretableIou;
            }
            if (!unit.formula.label.empty())
                entry["formula"] = {{"formula", unit.formula.label}, {"iou", jsonNumber(unit.formula.score)},
                    {"intersection", unit.formula.intersection}, {"unit_pixels", unit.formula.unitArea},
                    {"formula_pixels", unit.formula.conceptArea}};
            if (result.method != DissectionMethod::Iou) {
                nlohmann::json invert = nlohmann::json::array();
                for (const auto& c : unit.invert)
                    invert.push_back(
                        {{"concept", c.label}, {"category", categoryOf(result, c)}, {"auc", jsonNumber(c.score)},
                            {"p", jsonNumber(c.pValue)}, {"p_uncorrected", jsonNumber(c.uncorrectedP)}});
                entry["invert"] = invert;
                entry["interpretable_invert"] = unit.interpretableInvert;
            }
            nlohmann::json top = nlohmann::json::array();
            for (const auto& image : unit.topImages)
                top.push_back({{"image", image.image}, {"path", result.images[static_cast<size_t>(image.image)]},
                    {"value", jsonNumber(image.value)}, {"map", mapRows(image.map)}});
            entry["top_images"] = top;
            units.push_back(entry);
        }
        nlohmann::json categories = nlohmann::json::array();
        for (const auto& count : layer.categories)
            categories.push_back({{"category", count.category}, {"iou", count.iou}, {"invert", count.invert}});
        layers.push_back({{"layer", layer.layer}, {"units_kind", layer.units},
            {"units_count", layer.unitResults.size()}, {"grid", {layer.gridHeight, layer.gridWidth}},
            {"interpretable", {{"iou", layer.interpretableIou}, {"invert", layer.interpretableInvert}}},
            {"categories", categories}, {"units", units}});
    }
    nlohmann::json concepts = nlohmann::json::array();
    for (size_t c = 0; c < result.conceptNames.size(); ++c) {
        nlohmann::json item = {{"name", result.conceptNames[c]}, {"category", result.conceptCategories[c]},
            {"images", result.conceptImages.empty() ? 0 : result.conceptImages[c]}};
        if (!result.conceptPixels.empty())
            item["pixels"] = result.conceptPixels[c];
        concepts.push_back(item);
    }
    nlohmann::json failures = nlohmann::json::array();
    for (const auto& [file, why] : result.failures)
        failures.push_back({{"path", file}, {"error", why}});
    const nlohmann::json out = {{"concept_set", result.concepts}, {"layout", result.layout},
        {"method", toString(result.method)}, {"quantile", result.quantile}, {"iou_threshold", result.iouThreshold},
        {"auc_threshold", result.aucThreshold}, {"alpha", result.alpha}, {"pooling", result.pooling},
        {"categories", result.categories}, {"concepts", concepts}, {"images", result.images},
        {"images_read", result.imagesRead}, {"layers", layers}, {"cancelled", result.cancelled}, {"failures", failures},
        {"warnings", result.warnings}};
    return out.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"; // names not in UTF-8 too
}

std::string csv(const DissectionResult& result)
{
    std::ostringstream out;
    out << "layer,unit,method,rank,concept,category,score,p,interpretable\n";
    for (const auto& layer : result.layers)
        for (const auto& unit : layer.unitResults) {
            const auto rows
                = [&](const std::vector<UnitConcept>& list, const char* method, bool interpretable, bool p) {
                      for (size_t r = 0; r < list.size(); ++r)
                          out << csvField(layer.layer) << ',' << unit.unit << ',' << method << ',' << r + 1 << ','
                              << csvField(list[r].label) << ',' << csvField(categoryOf(result, list[r])) << ','
                              << csvNumber(list[r].score) << ',' << (p ? csvNumber(list[r].pValue) : "") << ','
                              << (r == 0 && interpretable ? 1 : 0) << '\n';
                  };
            rows(unit.iou, "iou", unit.interpretableIou, false);
            if (!unit.formula.label.empty())
                rows({unit.formula}, "formula", unit.formula.score > result.iouThreshold, false);
            rows(unit.invert, "invert", unit.interpretableInvert, true);
        }
    return out.str();
}

} // namespace

void writeDissection(const std::string& path, const DissectionResult& result, const ExportManifest* manifest)
{
    if (endsWith(path, ".json"))
        writeFileAtomically(path, json(result));
    else if (endsWith(path, ".csv"))
        writeFileAtomically(path, csv(result));
    else
        throw Error("a dissection is written as FILE.json or FILE.csv, not '" + path + "'");
    if (manifest) {
        ExportManifest described = *manifest;
        described.settings.emplace_back("concepts", result.concepts);
        described.settings.emplace_back("method", toString(result.method));
        writeManifest(path, described);
    }
}

} // namespace torchscope
