#pragma once

// Network dissection (docs/concepts.md): which units of a layer detect which of a concept set's
// concepts. Units are a layer's channels, an SAE's latents or a linear probe's directions, each a map
// over the layer's positions (concept_units.h). Two measures:
//
//   iou     Bau et al. 2017, as NetDissect-Lite computes it: each unit's threshold is the top
//           `quantile` (0.5 %) of its values over the set (every image and position, exact: the
//           largest values are kept as they stream); each image's unit map is upsampled bilinearly
//           (align_corners false, as PIL's resize) to the mask resolution and thresholded (> t);
//           IoU(unit, concept) = Σ|U ∩ C| / Σ|U ∪ C| over the set, the unit's pixels counted only in
//           images that annotate the concept's category. A unit is interpretable above
//           `iouThreshold` (0.04).
//   invert  Bykov et al. 2023 (INVERT): each unit's activation pooled per image (mean or max over
//           positions) ranks the images; AUC(unit, concept) = the Mann–Whitney U of the concept's
//           images against the rest / (n1 n0), ties counted half (scikit-learn's roc_auc_score); its
//           one-sided p-value (the unit higher on the concept) from the normal approximation with tie
//           and continuity corrections (SciPy's mannwhitneyu, method "asymptotic"), Bonferroni-
//           corrected over units × concepts. Interpretable: AUC ≥ `aucThreshold` and corrected p <
//           `alpha`.
//
// Formulas (Mu & Andreas 2020): with `formulaLength` > 1, a beam search (width `beam`) of formulas
// F op C (op: AND, OR, AND NOT) from the best single concepts by IoU, up to that many concepts;
// each unit gets its best formula and IoU beside its best single concept's. Exact: the pass keeps,
// per unit, how many of its pixels fall on each combination of concepts, and a formula's counts are
// sums over combinations.
//
// One or two passes over the set, every layer at once: the first ranks (invert) and finds the
// thresholds (iou), the second counts the pixels (iou). Memory: per unit its pooled value per
// image and the top `quantile` of its values, plus the top images' maps.

#include "common/float_tensor.h"
#include "common/parameters.h"
#include "common/progress.h"
#include "graph/analysis_context.h"
#include "model/model_setup.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace torchscope {

class Engine;
struct ExportManifest;

enum class DissectionMethod { Iou, Invert, Both };
DissectionMethod parseDissectionMethod(const std::string& text); // "iou" | "invert" | "both"; throws
std::string toString(DissectionMethod method);

struct DissectionRequest {
    ModelSetup setup;
    std::vector<std::string> layers; // empty: the SAE's or probe's own layer
    std::string concepts; // a concept set's folder (concept_set.h)
    std::string units = "channels"; // "channels", "sae:FOLDER", "probe:FILE"
    DissectionMethod method = DissectionMethod::Both;
    double quantile = 0.005; // iou: the top share of each unit's values that is its region
    double iouThreshold = 0.04;
    std::string pooling = "mean"; // invert: "mean" or "max" over positions
    double aucThreshold = 0.9;
    double alpha = 0.05;
    int64_t formulaLength = 1; // 1: single concepts only; up to 3
    int64_t beam = 5;
    int64_t top = 5; // concepts kept per unit and measure
    int64_t topImages = 8; // images kept per unit (largest maximum), with their maps
    int64_t maxImages = 0;
    int imageBatch = 16;
    // iou: the most MiB of the layers' maps the first pass may keep on disk (common/tensor_spill.h) for
    // the second, which then reads them instead of running the model again; -1: half the temporary
    // folder's free space; 0: never (the model runs twice).
    int64_t spillMb = -1;

    // Its parameters, once (common/parameters.h): the CLI's options, the manifest's settings. The
    // setup is the front end's.
    void visit(ParameterVisitor& v);
};

struct UnitConcept {
    int32_t conceptId = -1; // a single concept; -1 for a formula
    std::string label; // the concept's name, or the formula ("(red OR blue) AND NOT circle")
    double score = 0.0; // IoU or AUC
    double pValue = 1.0; // invert: Bonferroni-corrected; iou: unused
    double uncorrectedP = 1.0;
    int64_t intersection = 0, unitArea = 0, conceptArea = 0; // iou: pixels over the set
};

struct DissectionImage {
    int64_t image = 0; // its place in DissectionResult::images
    float value = 0.0f; // the unit's largest value in it
    FloatTensor map; // [h, w]: the unit over the layer's positions
};

struct DissectedUnit {
    int64_t unit = 0;
    double threshold = 0.0; // iou: its top-quantile value
    std::vector<UnitConcept> iou; // best first, `top` of them
    std::vector<UnitConcept> invert; // best AUC first
    UnitConcept formula; // iou with formulas: the best formula (label empty: none searched)
    bool interpretableIou = false, interpretableInvert = false;
    std::vector<DissectionImage> topImages;
};

struct CategoryCount {
    std::string category;
    int64_t iou = 0, invert = 0; // interpretable units whose best concept is of this category
};

struct DissectedLayer {
    std::string layer;
    std::string units; // "channels", "SAE latents", "probe directions"
    int64_t gridHeight = 0, gridWidth = 0;
    std::vector<std::string> unitNames; // probe: its classes; else empty
    std::vector<DissectedUnit> unitResults;
    std::vector<CategoryCount> categories;
    int64_t interpretableIou = 0, interpretableInvert = 0;
};

struct DissectionResult {
    std::string concepts, layout;
    std::vector<std::string> conceptNames, conceptCategories; // per concept
    std::vector<int64_t> conceptImages; // per concept: images that show it
    std::vector<int64_t> conceptPixels; // per concept: its pixels over the set (pixel-level sets)
    std::vector<std::string> images; // the set's images, in the order `image` indices count
    std::vector<std::string> categories;
    DissectionMethod method = DissectionMethod::Both;
    double quantile = 0.0, iouThreshold = 0.0, aucThreshold = 0.0, alpha = 0.0;
    std::string pooling;
    std::vector<DissectedLayer> layers;
    int64_t imagesRead = 0;
    bool cancelled = false; // a cancelled run keeps the layers' first pass only where the second had not begun
    int64_t spilledBytes = 0; // the maps the second pass read from disk (0: it ran the model again)
    double seconds = 0.0; // the dissection's wall time (reading the set to the last score)
    // Of which in the model's forward passes (both passes when it ran twice). On a GPU the passes return
    // before their kernels end: the rest of their time shows where the maps are copied to the CPU.
    double modelSeconds = 0.0;
    std::vector<std::pair<std::string, std::string>> failures;
    std::vector<std::string> warnings;
};

// Throws torchscope::Error for a request that cannot run: no layer, a concept set that does not read,
// iou on an image-level set, units that do not fit the layer. `progress`: images of the first pass
// ("ranking"), then of the second ("counting"), counted over both (of twice the images with iou);
// returning false cancels, keeping what is complete.
DissectionResult dissect(Engine& engine, const DissectionRequest& request, const ProgressCallback& progress = {});

struct DissectionAnalysis {
    using Request = DissectionRequest;
    using Result = DissectionResult;
    static constexpr const char* name = "dissect";
    static Result run(AnalysisContext& context, const Request& request);
};

// FILE.json (every unit's concepts, formulas, top images with maps, per-layer counts by category) or
// FILE.csv (one row per unit and measure: layer, unit, method, rank, concept, category, score, p,
// interpretable); the manifest beside. Written atomically. Throws torchscope::Error for another
// extension.
void writeDissection(const std::string& path, const DissectionResult& result, const ExportManifest* manifest = nullptr);

// The statistics behind `invert`, exposed for the tests: AUC and one-sided Mann–Whitney p of
// `values` (per image) for the images marked in `positive` against the rest; NaN when either
// group is empty or every value ties.
std::pair<double, double> aucAndPValue(const std::vector<float>& values, const std::vector<bool>& positive);

} // namespace torchscope
