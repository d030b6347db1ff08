// The formula search of network dissection (concepts/concept_scores.h) on counts worked out by hand;
// the dissection itself is held to NetDissect-Lite transcribed in NumPy, scikit-learn and SciPy in
// tests/cli/test_dissect.py.
#include "concepts/concept_scores.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace torchscope {
namespace {

TEST(Formulas, AnOrOfOverlappingConceptsCountsTheirSharedPixelsOnce)
{
    // Four combinations of the concepts A and B (C is on no pixel): none, A only, B only, both.
    const at::Tensor pixels = at::tensor({1000.0, 100.0, 100.0, 50.0}, at::kDouble);
    const at::Tensor incidence
        = at::tensor({0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0}, at::kDouble).view({4, 3});
    // The unit's pixels on each: 80 on A only, 90 on B only, 50 on both (220 in all).
    const at::Tensor counts = at::tensor({0.0, 80.0, 90.0, 50.0}, at::kDouble).view({1, 4});
    const at::Tensor unitArea = at::tensor({220.0}, at::kDouble);
    DissectedLayer layer;
    layer.unitResults.resize(1);
    DissectionRequest request;
    request.formulaLength = 2;
    request.beam = 5;
    searchFormulas(layer, counts, pixels, incidence, unitArea, request, {"A", "B", "C"});
    // Alone: A 130 / (220 + 150 - 130), B 140 / (220 + 150 - 140). A OR B: every unit pixel (220) of its
    // 250 pixels, the 50 of both counted once: 220 / (220 + 250 - 220).
    const UnitConcept& best = layer.unitResults[0].formula;
    EXPECT_EQ(best.label, "B OR A"); // the beam grows from B, the better single concept
    EXPECT_EQ(best.intersection, 220);
    EXPECT_EQ(best.conceptArea, 250);
    EXPECT_EQ(best.unitArea, 220);
    EXPECT_DOUBLE_EQ(best.score, 220.0 / 250.0);
    EXPECT_EQ(best.conceptId, -1);

    // Formulas of one concept: the best single concept, B.
    request.formulaLength = 1;
    searchFormulas(layer, counts, pixels, incidence, unitArea, request, {"A", "B", "C"});
    EXPECT_EQ(layer.unitResults[0].formula.label, "B");
    EXPECT_DOUBLE_EQ(layer.unitResults[0].formula.score, 140.0 / 230.0);

    // A unit on A's pixels that B does not share: A AND NOT B, exactly.
    const at::Tensor onlyA = at::tensor({0.0, 100.0, 0.0, 0.0}, at::kDouble).view({1, 4});
    request.formulaLength = 2;
    searchFormulas(layer, onlyA, pixels, incidence, at::tensor({100.0}, at::kDouble), request, {"A", "B", "C"});
    EXPECT_EQ(layer.unitResults[0].formula.label, "A AND NOT B");
    EXPECT_DOUBLE_EQ(layer.unitResults[0].formula.score, 1.0);
}

} // namespace
} // namespace torchscope
