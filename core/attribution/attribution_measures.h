#pragma once

// One file format for what the attribution workbench measures, written by core for the CLI
// (`evaluate`, `sanity`) and the window (the Attribution tab's export) alike: the faithfulness
// metrics of each method's maps and the parameter-randomisation sanity check, per image, as JSON
// (docs/core_operations.md, "Result files") or CSV. Torch-free header.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace torchscope {

struct FaithfulnessRequest;
struct FaithfulnessResult;
struct SanityResult;

struct ExplainedImage {
    std::string path; // the file, or "sample N" for a tensor input
    int64_t target = -1; // the class explained
    std::string explained; // "class 3 (Dress)"; empty where not known
};

struct MetricValues {
    std::vector<double> perImage; // NaN where the image was not evaluated
    // deletion / insertion: each image's probability curve, step 0 (nothing changed) first;
    // ROAD: each image's probability change at each percentile
    std::vector<std::vector<double>> curves;
};

// One randomised layer's similarity of each image's map to the original model's.
struct SanityLayerValues {
    std::string layer, type;
    std::vector<double> spearmanAbs, spearman, ssim; // per image
};

struct AttributionMeasures {
    std::string model;
    std::vector<ExplainedImage> images;
    uint64_t seed = 0;
    // Faithfulness (evaluate, the window's metrics)
    std::string attributions; // the file the maps came from; empty when they were made here
    int64_t pixelsPerStep = 0;
    std::string deletionFill, insertionStart;
    // The memory cap and the inputs perturbed together under it: another batch can move a score in its
    // last bits (another kernel's summation order), so both are recorded.
    int64_t memoryBytes = 0;
    int batch = 0;
    std::map<std::string, std::map<std::string, MetricValues>> metrics; // method -> metric -> values
    // Sanity check (sanity, the window's check)
    std::string sanityMode; // empty: none ran
    std::vector<std::string> notRandomised;
    std::vector<std::string> afterProbe; // SanityResult::afterProbe
    std::map<std::string, std::vector<SanityLayerValues>> sanity; // method -> layers in the order randomised
};

// One method's faithfulness metrics into the measures (the fills and step from the request).
void addFaithfulness(AttributionMeasures& measures, const std::string& method, const FaithfulnessResult& result,
    const FaithfulnessRequest& request);
// Every method's sanity check into the measures.
void addSanity(AttributionMeasures& measures, const SanityResult& result, const std::string& mode);

// The measures as JSON: {"model", "images": [{"path", "target", "explained"}], "seed", then where
// metrics were computed "pixels_per_step", "deletion_fill", "insertion_start", "memory_mb", "batch", ("attributions"),
// "methods": {METHOD: {METRIC: {"mean", "sd", "images", "per_image", ("curves")}}}, and where a
// sanity check ran "sanity": {"mode", "not_randomised", "methods": {METHOD: {"layers": [{"layer",
// "type", "spearman_abs", "spearman", "ssim", "per_image": {...}}]}}}}. NaN is written as null;
// means and sd are over the finite values (sd as numpy.std).
std::string attributionMeasuresJson(const AttributionMeasures& measures);
// method,metric,image,value: a row per image, then the mean and sd of each method and metric.
std::string faithfulnessCsv(const AttributionMeasures& measures);
// method,mode,order,layer,type,spearman_abs,spearman,ssim: a row per randomised layer (means).
std::string sanityCsv(const AttributionMeasures& measures);

} // namespace torchscope
