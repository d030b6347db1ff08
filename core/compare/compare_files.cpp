#include "compare/compare_files.h"

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/json_number.h"
#include "common/strings.h"
#include "export/manifest.h"
#include "export/pt_export.h"

#include <ATen/ATen.h>
#include <ATen/core/Dict.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <iomanip>
#include <sstream>

namespace torchscope {
namespace {

std::string number(double value)
{
    if (std::isnan(value))
        return "nan";
    std::ostringstream out;
    out << std::setprecision(10) << value;
    return out.str();
}

at::Tensor measure(const Comparison& comparison, double LayerDifference::*field)
{
    std::vector<double> values;
    for (const auto& layer : comparison.layers)
        values.push_back(layer.*field);
    return at::tensor(values, at::kDouble);
}

const std::vector<std::pair<const char*, double LayerDifference::*>> Measures{
    {"cka", &LayerDifference::cka},
    {"cosine", &LayerDifference::cosine},
    {"relative_l2", &LayerDifference::relativeL2},
    {"max_abs_error", &LayerDifference::maxAbsError},
    {"max_relative_error", &LayerDifference::maxRelativeError},
};

c10::List<std::string> stringList(const std::vector<std::string>& values)
{
    c10::List<std::string> list;
    for (const auto& v : values)
        list.push_back(v);
    return list;
}

void writePt(const std::string& path, const CompareResult& result)
{
    std::vector<std::pair<std::string, c10::IValue>> values;
    values.emplace_back("mode", modeName(result.mode));
    values.emplace_back("model_a", result.modelA);
    values.emplace_back("model_b", result.modelB);
    values.emplace_back("layers_a", stringList(result.layersA));
    values.emplace_back("layers_b", stringList(result.layersB));
    if (!result.cka.empty())
        values.emplace_back("cka",
            at::tensor(result.cka, at::kDouble)
                .reshape({static_cast<int64_t>(result.layersA.size()), static_cast<int64_t>(result.layersB.size())}));
    values.emplace_back("samples", result.samples);
    values.emplace_back("cka_samples", result.ckaSamples);
    values.emplace_back("threshold", result.threshold);
    c10::impl::GenericList comparisons(c10::AnyType::get());
    for (const auto& comparison : result.comparisons) {
        c10::impl::GenericDict entry(c10::StringType::get(), c10::AnyType::get());
        entry.insert("name", comparison.name);
        std::vector<std::string> layers;
        for (const auto& layer : comparison.layers)
            layers.push_back(layer.layer);
        entry.insert("layers", stringList(layers));
        for (const auto& [name, field] : Measures)
            entry.insert(name, measure(comparison, field));
        entry.insert("first_over", comparison.firstOver ? static_cast<int64_t>(*comparison.firstOver) : int64_t{-1});
        entry.insert("unavailable", comparison.unavailable);
        comparisons.push_back(entry);
    }
    values.emplace_back("comparisons", comparisons);
    writePtDictionary(path, values);
}

} // namespace

std::string comparisonCsv(const CompareResult& result)
{
    std::ostringstream out;
    if (result.comparisons.empty()) {
        out << "layer_a";
        for (const auto& b : result.layersB)
            out << ',' << b;
        out << '\n';
        for (size_t i = 0; i < result.layersA.size(); ++i) {
            out << result.layersA[i];
            for (size_t j = 0; j < result.layersB.size(); ++j)
                out << ',' << number(result.ckaAt(i, j));
            out << '\n';
        }
        return out.str();
    }
    out << "comparison,layer";
    for (const auto& [name, field] : Measures)
        out << ',' << name;
    out << ",first_over\n";
    for (const auto& comparison : result.comparisons)
        for (size_t i = 0; i < comparison.layers.size(); ++i) {
            out << comparison.name << ',' << comparison.layers[i].layer;
            for (const auto& [name, field] : Measures)
                out << ',' << number(comparison.layers[i].*field);
            out << ',' << (comparison.firstOver == i ? "yes" : "") << '\n';
        }
    return out.str();
}

std::string comparisonJson(const CompareResult& result)
{
    nlohmann::json json{{"mode", modeName(result.mode)}, {"model_a", result.modelA}, {"model_b", result.modelB},
        {"features", result.features == CkaFeatures::Pooled ? "pooled" : "flattened"}, {"layers_a", result.layersA},
        {"layers_b", result.layersB}, {"samples", result.samples}, {"cka_samples", result.ckaSamples},
        {"cka_batches", result.ckaBatches}, {"threshold", result.threshold}, {"cancelled", result.cancelled},
        {"warnings", result.warnings}};
    nlohmann::json matrix = nlohmann::json::array();
    for (size_t i = 0; i < result.layersA.size() && !result.cka.empty(); ++i) {
        nlohmann::json row = nlohmann::json::array();
        for (size_t j = 0; j < result.layersB.size(); ++j)
            row.push_back(jsonNumber(result.ckaAt(i, j)));
        matrix.push_back(row);
    }
    json["cka"] = matrix;
    nlohmann::json comparisons = nlohmann::json::array();
    for (const auto& comparison : result.comparisons) {
        nlohmann::json layers = nlohmann::json::array();
        for (const auto& layer : comparison.layers) {
            nlohmann::json entry{{"layer", layer.layer}, {"shape", layer.shape}};
            for (const auto& [name, field] : Measures)
                entry[name] = jsonNumber(layer.*field);
            layers.push_back(entry);
        }
        comparisons.push_back({{"name", comparison.name}, {"layers", layers},
            {"first_over",
                comparison.firstOver ? nlohmann::json(comparison.layers[*comparison.firstOver].layer)
                                     : nlohmann::json(nullptr)},
            {"unavailable", comparison.unavailable}});
    }
    json["comparisons"] = comparisons;
    nlohmann::json failures = nlohmann::json::array();
    for (const auto& [file, why] : result.failures)
        failures.push_back({{"path", file}, {"why", why}});
    json["failures"] = failures;
    return json.dump(2) + "\n";
}

void writeComparison(const std::string& path, const CompareResult& result, const ExportManifest* manifest)
{
    if (endsWith(path, ".pt"))
        writePt(path, result);
    else if (endsWith(path, ".json"))
        writeFileAtomically(path, comparisonJson(result));
    else if (endsWith(path, ".csv"))
        writeFileAtomically(path, comparisonCsv(result));
    else
        throw Error("a comparison is written as FILE.pt, FILE.json or FILE.csv, not '" + path + "'");
    if (!manifest)
        return;
    // The layers compared are the comparison's keys, unless the caller named its own.
    ExportManifest described = *manifest;
    if (described.keys.empty()) {
        for (const auto& layer : result.layersA)
            described.keys.push_back({layer, layer, "output of model A"});
        for (const auto& layer : result.layersB)
            described.keys.push_back({layer, layer, "output of model B"});
    }
    writeManifest(path, described);
}

} // namespace torchscope
