// The formula search of network dissection (concepts/concept_scores.h) on counts worked out by hand;
// the dissection itself is held to NetDissect-Lite transcribed in NumPy, scikit-learn and SciPy in
// tests/cli/test_dissect.py.
#include "concepts/concept_scores.h"
#include "concepts/dissection.h"
#include "concepts/synthetic_concepts.h"
#include "graph/engine.h"
#include "model/model.h"
#include "model/model_setup.h"
#include "test_support.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

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

// Every number a unit gets, in order, for comparing two runs: a NaN (a p-value INVERT cannot give where a
// concept is in every image or none) as a flag and 0, so that two runs must agree on where it is.
std::vector<double> numbersOf(const DissectionResult& result)
{
    std::vector<double> numbers;
    const auto add = [&](double v) {
        numbers.push_back(std::isnan(v) ? 1.0 : 0.0);
        numbers.push_back(std::isnan(v) ? 0.0 : v);
    };
    for (const auto& layer : result.layers)
        for (const auto& unit : layer.unitResults) {
            add(unit.threshold);
            for (const auto* list : {&unit.iou, &unit.invert})
                for (const auto& c : *list)
                    for (const double v : {double(c.conceptId), c.score, c.pValue, double(c.intersection),
                             double(c.unitArea), double(c.conceptArea)})
                        add(v);
            add(unit.formula.score);
            for (const auto& image : unit.topImages) {
                add(double(image.image));
                add(double(image.value));
            }
        }
    return numbers;
}

// One loaded model, dissected several times in a row with other settings (quantile, method, pooling,
// formulas, the spill): each equals a fresh engine's dissection of the same request, number for number,
// and differs from the run before it. The set is drawn in colour; the demo model reads it in grey.
TEST(Dissection, OtherSettingsOnOneLoadedModelEqualAFreshEngine)
{
    const auto folder = test::freshFolder("dissect_twice") / "concepts";
    SyntheticConceptsRequest draw;
    draw.out = folder.string();
    draw.images = 24;
    draw.height = 40;
    draw.width = 48; // height != width
    draw.seed = 3;
    ASSERT_EQ(makeSyntheticConcepts(draw).images, 24);
    DissectionRequest base;
    base.setup = storedSetup(*Model::load(test::demoModelPath())).value_or(ModelSetup{});
    base.layers = {"features.1"};
    base.concepts = folder.string();
    base.imageBatch = 5;
    std::vector<DissectionRequest> runs(5, base);
    runs[0].method = DissectionMethod::Iou;
    runs[1].method = DissectionMethod::Iou;
    runs[1].quantile = 0.05;
    runs[2].quantile = 0.05;
    runs[2].formulaLength = 2;
    runs[2].beam = 3;
    runs[3].method = DissectionMethod::Invert;
    runs[3].pooling = "max";
    runs[4].method = DissectionMethod::Iou;
    runs[4].quantile = 0.05;
    runs[4].spillMb = 0; // the model runs twice instead of reading its maps back: the same numbers
    Engine shared(Model::load(test::demoModelPath()));
    std::vector<std::vector<double>> numbers;
    for (size_t i = 0; i < runs.size(); ++i) {
        SCOPED_TRACE("run " + std::to_string(i));
        const DissectionResult got = dissect(shared, runs[i]);
        Engine fresh(Model::load(test::demoModelPath()));
        const DissectionResult want = dissect(fresh, runs[i]);
        ASSERT_EQ(got.layers.size(), 1u);
        ASSERT_EQ(got.layers[0].unitResults.size(), want.layers[0].unitResults.size());
        numbers.push_back(numbersOf(got));
        EXPECT_EQ(numbers.back(), numbersOf(want));
        ASSERT_GT(numbers.back().size(), 100u);
    }
    for (size_t i = 1; i + 1 < runs.size(); ++i)
        EXPECT_NE(numbers[i], numbers[i - 1]) << "run " << i << ": the settings changed nothing";
    EXPECT_EQ(numbers[4], numbers[1]) << "the spill changed a number";
}

} // namespace
} // namespace torchscope
