#pragma once

// The attribution workbench over image files: the one operation behind the window's Attribution
// tab. Every method's map of every image (attribution/input_attributions.h), the faithfulness
// metrics under each map (attribution/faithfulness.h) and, when asked, the parameter-randomisation
// sanity check (attribution/sanity_checks.h), as plain values the window draws. Torch-free header.

#include "attribution/attribution_measures.h"
#include "common/float_tensor.h"
#include "common/progress.h"
#include "graph/analysis_context.h"
#include "model/model_setup.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace torchscope {

class Engine;
class Model;
struct FaithfulnessRequest;
struct InputAttributionRequest;
struct ExportManifest;

struct AttributionWorkbenchRequest {
    std::vector<std::string> images;
    ModelSetup setup; // preprocessing, the scores element, the labels
    std::vector<std::string> methods; // attribute's names
    std::string layer; // the layer methods'
    int64_t targetClass = -1; // -1: each image's prediction
    int steps = 50; // integrated_gradients
    std::string rule = "gausslegendre";
    std::string baseline = "black"; // black, blur or noise (the CLI's --baseline FILE adds an image)
    double blurSigma = 0.0; // the blur baseline's and fill's sigma; 0: a tenth of the shorter side
    int samples = 25; // smoothgrad, smoothgrad_sq, vargrad
    double noise = 0.15;
    uint64_t seed = 0;
    int window = 8; // occlusion
    int stride = 4;
    std::string composite = "epsilon_plus_flat"; // lrp: Zennit's composite by name
    std::vector<std::string> relevanceRules; // lrp: PATH=RULE overrides (relevance/relevance_rules.h)
    std::string attentionRule = "cp"; // lrp: cp or attnlrp (relevance/relevance_rules.h)
    std::vector<std::string> metrics; // evaluate's names
    int64_t pixelsPerStep = 0; // deletion / insertion; 0: a hundredth of the image
    std::string fill; // what deletion removes to and insertion starts from; "": zero and blur (RISE's)
    std::string sanityMode; // "" : no sanity check; "cascading" or "independent"
    int64_t memoryBytes = int64_t{1} << 30;
};

struct WorkbenchImage {
    std::string image;
    int64_t target = -1;
    std::string targetDescription;
    FloatTensor picture; // [H, W, 3] in [0, 1]: the input as the model saw it
};

struct WorkbenchMap {
    FloatTensor importance; // [H, W]: the map summed over its channels, at the input's size
    double low = 0.0, high = 0.0; // its range
    std::map<std::string, double> metrics; // metric -> this image's value
    std::map<std::string, std::vector<double>> curves; // deletion, insertion, ROAD
};

struct WorkbenchMetricSummary {
    double mean = 0.0, sd = 0.0; // over the images (sd as numpy.std)
    std::vector<double> meanCurve; // deletion / insertion / ROAD: the images' mean curve
};

struct WorkbenchSanityLayer {
    std::string layer, type;
    double spearmanAbs = 0.0, spearman = 0.0, ssim = 0.0; // means over the images
    FloatTensor firstImage; // [H, W]: the first image's map with the layers so far randomised
};

struct AttributionWorkbenchResult {
    std::vector<WorkbenchImage> images; // in request order, without those that failed
    std::vector<std::string> methods;
    std::map<std::string, std::vector<WorkbenchMap>> maps; // method -> per image
    std::map<std::string, std::map<std::string, WorkbenchMetricSummary>> summary; // method -> metric
    std::map<std::string, std::vector<WorkbenchSanityLayer>> sanity; // method -> layers in the order randomised
    std::string sanityMode;
    std::vector<std::string> notRandomised; // modules whose initialiser is not known
    std::vector<std::string> afterProbe; // layers after the probe's, left as they are (SanityResult)
    std::vector<std::pair<std::string, std::string>> failures; // image, why
    int64_t pixelsPerStep = 0;
    bool cancelled = false; // what finished is kept
    // Every figure per image, as `evaluate` and `sanity` write them (attributionMeasuresJson).
    AttributionMeasures measures;
};

// One image's part of the result, handed over as soon as its maps and their metrics are done, so
// that the window draws it before the job ends (the sanity check comes after every image).
struct WorkbenchImageResult {
    size_t index = 0; // its place in the result's images
    WorkbenchImage image;
    std::map<std::string, WorkbenchMap> maps; // method -> its map
};

struct AttributionWorkbenchReports {
    ProgressCallback progress; // returning false cancels at the next image or stage
    // Whether a cancel was asked for: checked before every forward pass (common/cancel_scope.h), so
    // one image's thousands of occlusion or path evaluations stop at their next batch; the image
    // in progress is then left out (or, in its metrics, left with NaN where a metric did not run).
    std::function<bool()> cancelled;
    std::function<void(const WorkbenchImageResult&)> onImage;
};

// `scratch`: a second copy of the model for the sanity check (it is randomised), or nullptr when
// request.sanityMode is empty. Images whose input size differs from the first image's are listed
// as failures (the maps are compared across images). The images go one at a time, each through
// every method and then every metric (each image's seeded draws are those of the whole batch: the
// seed plus its index), then the sanity check over all of them. Progress moves per image and method
// ("attributions: METHOD", "metrics: METHOD", then "sanity check"). Throws torchscope::Error for a
// wrong request.
AttributionWorkbenchResult runAttributionWorkbench(Engine& engine, const std::shared_ptr<Model>& scratch,
    const AttributionWorkbenchRequest& request, const AttributionWorkbenchReports& reports = {});

// The requests these settings make, for the workbench and for the CLI's attribute, evaluate and
// sanity alike (one builder): every method's settings, the setup's scores and labels, the target
// class; methods sorted, each once. A baseline image (BaselineKind::Image) is the caller's to load.
InputAttributionRequest inputAttributionRequest(const AttributionWorkbenchRequest& request);
FaithfulnessRequest faithfulnessRequest(
    const AttributionWorkbenchRequest& request, const InputAttributionRequest& attribution);

// The analysis "attribution": runAttributionWorkbench on the context's model (and, for the sanity
// check, a copy of it loaded afresh).
struct AttributionAnalysis {
    using Request = AttributionWorkbenchRequest;
    using Result = AttributionWorkbenchResult;
    static constexpr const char* name = "attribution";
    static Result run(AnalysisContext& context, const Request& request);
};

// The maps [N, H, W] per method ("M"), "targets" and each metric per image ("M:METRIC") as one
// tensor file (.pt, .npz, .safetensors) with the manifest beside; returns the keys the format
// left out.
std::vector<std::string> writeAttributionMaps(
    const std::string& path, const AttributionWorkbenchResult& result, const ExportManifest* manifest = nullptr);

} // namespace torchscope
