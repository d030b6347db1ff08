#include "attribution/attribution_measures.h"

#include "attribution/faithfulness.h"
#include "attribution/sanity_checks.h"
#include "common/finite_summary.h"
#include "common/json_number.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

namespace torchscope {
namespace {

nlohmann::json numbers(const std::vector<double>& values)
{
    nlohmann::json list = nlohmann::json::array();
    for (double v : values)
        list.push_back(jsonNumber(v));
    return list;
}

std::string quoted(const std::string& text)
{
    std::string q = "\"";
    for (char c : text)
        q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
}

} // namespace

void addFaithfulness(AttributionMeasures& measures, const std::string& method, const FaithfulnessResult& result,
    const FaithfulnessRequest& request)
{
    measures.pixelsPerStep = result.pixelsPerStep;
    measures.deletionFill = fillName(request.deletionFill);
    measures.insertionStart = fillName(request.insertionStart);
    measures.seed = request.seed;
    measures.memoryBytes = request.memoryBytes;
    measures.batch = std::max(measures.batch, result.batch);
    measures.metrics[method] = result.metrics;
}

void addSanity(AttributionMeasures& measures, const SanityResult& result, const std::string& mode)
{
    measures.sanityMode = mode;
    measures.notRandomised = result.skipped;
    measures.afterProbe = result.afterProbe;
    for (const auto& method : result.methods) {
        auto& layers = measures.sanity[method.method];
        layers.clear();
        for (const auto& layer : method.layers)
            layers.push_back({layer.layer, layer.type, layer.spearmanAbs, layer.spearman, layer.ssim});
    }
}

std::string attributionMeasuresJson(const AttributionMeasures& measures)
{
    nlohmann::json out;
    out["model"] = measures.model;
    out["images"] = nlohmann::json::array();
    for (const auto& image : measures.images)
        out["images"].push_back({{"path", image.path}, {"target", image.target}, {"explained", image.explained}});
    out["seed"] = measures.seed;
    if (!measures.metrics.empty()) {
        out["pixels_per_step"] = measures.pixelsPerStep;
        out["deletion_fill"] = measures.deletionFill;
        out["insertion_start"] = measures.insertionStart;
        out["memory_mb"] = measures.memoryBytes >> 20;
        out["batch"] = measures.batch;
        if (!measures.attributions.empty())
            out["attributions"] = measures.attributions;
        nlohmann::json methods = nlohmann::json::object();
        for (const auto& [method, metrics] : measures.metrics)
            for (const auto& [metric, values] : metrics) {
                const FiniteSummary s = summariseFinite(values.perImage);
                nlohmann::json entry{{"mean", jsonNumber(s.mean)}, {"sd", jsonNumber(s.sd)}, {"images", s.count},
                    {"per_image", numbers(values.perImage)}};
                if (!values.curves.empty())
                    entry["curves"] = values.curves;
                methods[method][metric] = entry;
            }
        out["methods"] = methods;
    }
    if (!measures.sanityMode.empty()) {
        nlohmann::json methods = nlohmann::json::object();
        for (const auto& [method, layers] : measures.sanity) {
            nlohmann::json list = nlohmann::json::array();
            for (const auto& layer : layers)
                list.push_back({{"layer", layer.layer}, {"type", layer.type},
                    {"spearman_abs", jsonNumber(summariseFinite(layer.spearmanAbs).mean)},
                    {"spearman", jsonNumber(summariseFinite(layer.spearman).mean)},
                    {"ssim", jsonNumber(summariseFinite(layer.ssim).mean)},
                    {"per_image",
                        {{"spearman_abs", numbers(layer.spearmanAbs)}, {"spearman", numbers(layer.spearman)},
                            {"ssim", numbers(layer.ssim)}}}});
            methods[method]["layers"] = list;
        }
        out["sanity"] = {{"mode", measures.sanityMode}, {"not_randomised", measures.notRandomised},
            {"after_probe", measures.afterProbe}, {"methods", methods}};
    }
    return out.dump(2) + "\n";
}

std::string faithfulnessCsv(const AttributionMeasures& measures)
{
    std::ostringstream csv;
    csv << std::setprecision(9) << "method,metric,image,value\n";
    for (const auto& [method, metrics] : measures.metrics)
        for (const auto& [metric, values] : metrics) {
            for (size_t i = 0; i < values.perImage.size(); ++i)
                if (std::isfinite(values.perImage[i]))
                    csv << method << ',' << metric << ','
                        << quoted(i < measures.images.size() ? measures.images[i].path : "sample " + std::to_string(i))
                        << ',' << values.perImage[i] << '\n';
            const FiniteSummary s = summariseFinite(values.perImage);
            csv << method << ',' << metric << ",mean," << s.mean << '\n';
            csv << method << ',' << metric << ",sd," << s.sd << '\n';
        }
    return csv.str();
}

std::string sanityCsv(const AttributionMeasures& measures)
{
    std::ostringstream csv;
    csv << std::setprecision(9) << "method,mode,order,layer,type,spearman_abs,spearman,ssim\n";
    for (const auto& [method, layers] : measures.sanity)
        for (size_t k = 0; k < layers.size(); ++k) {
            const SanityLayerValues& layer = layers[k];
            csv << method << ',' << measures.sanityMode << ',' << k + 1 << ',' << layer.layer << ',' << layer.type
                << ',' << summariseFinite(layer.spearmanAbs).mean << ',' << summariseFinite(layer.spearman).mean << ','
                << summariseFinite(layer.ssim).mean << '\n';
        }
    return csv.str();
}

} // namespace torchscope
