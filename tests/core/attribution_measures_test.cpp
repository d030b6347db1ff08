// The attribution rooms' own measures on known numbers: Spearman as scipy's documentation gives it,
// numpy's percentile from its documentation, SSIM's bounds, ROAD's imputation of a linear image
// (inside, the neighbours' symmetric weighted mean reproduces a plane exactly), RISE's area under a curve.
#include "attribution/faithfulness.h"
#include "attribution/map_similarity.h"
#include "attribution/road_imputation.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <cmath>

using namespace torchscope;

TEST(MapSimilarity, SpearmanIsScipysWithTiesAveraged)
{
    // scipy.stats.spearmanr([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]).statistic (its documentation's example)
    const at::Tensor a = at::tensor({1.0, 2.0, 3.0, 4.0, 5.0}), b = at::tensor({5.0, 6.0, 7.0, 8.0, 7.0});
    EXPECT_NEAR(spearmanCorrelation(a, b), 0.8207826816681233, 1e-15);
    EXPECT_DOUBLE_EQ(spearmanCorrelation(a, -a), -1.0);
    EXPECT_TRUE(std::isnan(spearmanCorrelation(a, at::ones({5}))));
}

TEST(MapSimilarity, StructuralSimilarityOfAMapWithItselfIsOne)
{
    const at::Tensor map = at::rand({16, 16}, at::kDouble);
    EXPECT_NEAR(structuralSimilarity(map, map), 1.0, 1e-12);
    EXPECT_LT(structuralSimilarity(map, 1.0 - map), 0.0); // inverted structure
    EXPECT_THROW(structuralSimilarity(at::rand({5, 16}), at::rand({5, 16})), std::exception);
}

TEST(RoadImputation, PercentileIsNumpysLinear)
{
    // numpy.percentile([[10, 7, 4], [3, 2, 1]], 50) == 3.5; q 10 of 1..10 == 1.9
    EXPECT_DOUBLE_EQ(percentile(at::tensor({10.0, 7.0, 4.0, 3.0, 2.0, 1.0}), 50), 3.5);
    EXPECT_NEAR(percentile(at::arange(1, 11, at::kDouble), 10), 1.9, 1e-12);
}

TEST(RoadImputation, ALinearImageIsImputedExactly)
{
    const at::Tensor rows = at::arange(8, at::kFloat).view({8, 1}), columns = at::arange(8, at::kFloat).view({1, 8});
    const at::Tensor plane = (2 * rows + 3 * columns).unsqueeze(0); // [1, 8, 8]
    at::Tensor keep = at::ones({8, 8}, at::kBool);
    keep.narrow(0, 2, 4).narrow(1, 3, 3).fill_(false);
    keep[0][0] = false; // a corner too: there only its three neighbours count
    at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(0);
    const at::Tensor imputed = noisyLinearImputation(plane, keep, 0.0, generator);
    at::Tensor inside = keep.logical_not();
    inside[0][0] = false;
    EXPECT_LT((imputed - plane).masked_select(inside.unsqueeze(0)).abs().max().item<double>(), 1e-4);
    // The corner: (3 / 6 + 2 / 6 + 5 / 12) / (1 / 6 + 1 / 6 + 1 / 12) = 3, not the plane's 0.
    EXPECT_NEAR(imputed[0][0][0].item<double>(), 3.0, 1e-5);
    // With noise the kept pixels stay and the imputed ones move.
    const at::Tensor noisy = noisyLinearImputation(plane, keep, 0.5, generator);
    EXPECT_TRUE(at::equal(noisy.masked_select(keep.unsqueeze(0)), plane.masked_select(keep.unsqueeze(0))));
    EXPECT_GT((noisy - plane).abs().max().item<double>(), 0.01);
}

TEST(Faithfulness, AreaUnderCurveIsRisesTrapezoid)
{
    // RISE: (sum - first / 2 - last / 2) / (n - 1)
    EXPECT_DOUBLE_EQ(areaUnderCurve({1.0, 0.5, 0.0}), 0.5);
    EXPECT_DOUBLE_EQ(areaUnderCurve({0.0, 1.0, 1.0, 1.0, 0.0}), 0.75);
    EXPECT_TRUE(std::isnan(areaUnderCurve({1.0})));
}
