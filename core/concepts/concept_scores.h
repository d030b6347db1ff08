#pragma once

// The dissection's statistics (dissection.h), from what its passes gathered: INVERT's AUC and
// Mann–Whitney p per unit and concept, NetDissect's IoU from the pixels counted per combination of
// concepts, and Mu & Andreas's beam search of formulas over those counts.

#include "concepts/dissection.h"

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

namespace torchscope {

struct InvertScores {
    at::Tensor auc; // [concepts, units] float64; NaN for a concept in none or all of the images
    at::Tensor p; // [concepts, units] one-sided, uncorrected; NaN likewise, and where every value ties
    std::vector<bool> scored; // per concept: in some images and not in all
};

// values: [images, units]; labels: [concepts, images] of 0 and 1.
InvertScores invertScores(const at::Tensor& values, const at::Tensor& labels);

// Fills each unit's `invert` (best AUC first, Bonferroni over units × scored concepts) and
// `interpretableInvert`.
void labelInvert(DissectedLayer& layer, const InvertScores& scores, const DissectionRequest& request,
    const std::vector<std::string>& names);

struct IouScores {
    at::Tensor iou, intersection, unitArea; // [units, concepts] float64
    at::Tensor conceptArea; // [concepts]
};

// counts: [units, G] a unit's pixels on each of G combinations of concepts; pixels: [G] the set's
// pixels on each; incidence: [G, concepts] 0/1; unitArea: [units, categories] its pixels in images
// annotating each category; categoryOf: [concepts].
IouScores iouScores(const at::Tensor& counts, const at::Tensor& pixels, const at::Tensor& incidence,
    const at::Tensor& unitArea, const at::Tensor& unitAreaAll, const at::Tensor& categoryOf);

// Fills each unit's `iou` (best first) and `interpretableIou`.
void labelIou(DissectedLayer& layer, const IouScores& scores, const DissectionRequest& request,
    const std::vector<std::string>& names);

// Each unit's best formula of up to request.formulaLength concepts (beam search of width
// request.beam, AND / OR / AND NOT, from its best single concepts); a unit's pixels counted in every
// image. Fills `formula`.
void searchFormulas(DissectedLayer& layer, const at::Tensor& counts, const at::Tensor& pixels,
    const at::Tensor& incidence, const at::Tensor& unitAreaAll, const DissectionRequest& request,
    const std::vector<std::string>& names);

} // namespace torchscope
