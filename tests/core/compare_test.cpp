// Comparisons against NumPy (tests/fixtures/cka_numpy.py, written from the papers' formulas) on
// activations from forward hooks on the eager models, and against PyTorch's own float64, float32
// and bfloat16 runs of the demo model.
#include "test_support.h"

#include "compare/cka.h"
#include "compare/compare_run.h"
#include "compare/input_difference.h"
#include "compare/layer_difference.h"
#include "export/pt_export.h"
#include "model/model.h"

#include <ATen/ATen.h>

#include <cmath>
#include <limits>

namespace torchscope::test {
namespace {

const int Batch = 12; // as in the fixture's minibatch estimate: 36 samples in 3 batches

at::Tensor samples()
{
    return readTorchSaveFile(fixture("labelled_inputs.pt")).toGenericDict().at("samples").toTensor();
}

at::Tensor matrixOf(const CompareResult& result)
{
    return at::tensor(result.cka, at::kDouble)
        .reshape({static_cast<int64_t>(result.layersA.size()), static_cast<int64_t>(result.layersB.size())});
}

::testing::AssertionResult near(const std::string& label, double actual, double expected, double relative)
{
    const double tolerance = relative * std::max(1e-12, std::abs(expected));
    if (std::isfinite(actual) && std::isfinite(expected) && std::abs(actual - expected) <= tolerance)
        return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << label << ": " << actual << " against " << expected << " (tolerance "
                                         << tolerance << ")";
}

TEST(Cka, FullBatchEqualsNumPyOnHookActivations)
{
    const auto expected = loadExpected("compare_expected.pt");
    const auto layers = loadNames("compare_layers.json");
    for (const auto features : {CkaFeatures::Flattened, CkaFeatures::Pooled}) {
        const at::Tensor numpy = expected.at(features == CkaFeatures::Pooled ? "cka_full_pooled" : "cka_full");
        std::vector<double> ours;
        for (const auto& a : layers)
            for (const auto& b : layers)
                ours.push_back(linearCka(
                    sampleFeatures(expected.at("a/" + a), features), sampleFeatures(expected.at("b/" + b), features)));
        const at::Tensor actual = at::tensor(ours, at::kDouble).reshape(numpy.sizes());
        EXPECT_TRUE(tensorsClose("full-batch CKA", actual, numpy, 1e-6));
    }
}

TEST(Cka, StreamedMinibatchEstimateEqualsNumPy)
{
    const auto expected = loadExpected("compare_expected.pt");
    const auto layers = loadNames("compare_layers.json");
    const auto a = loadModel("compare_a.pt");
    const auto b = loadModel("compare_b.pt");
    for (const auto features : {CkaFeatures::Flattened, CkaFeatures::Pooled}) {
        CompareConfig config;
        config.layers = layers;
        config.features = features;
        const CompareResult result = compareModels(a, b, config, tensorBatches(samples(), {}, Batch));
        EXPECT_EQ(result.layersA, layers);
        EXPECT_EQ(result.layersB, layers);
        EXPECT_EQ(result.samples, 36);
        EXPECT_EQ(result.ckaBatches, 3);
        EXPECT_TRUE(result.warnings.empty());
        EXPECT_TRUE(tensorsClose("minibatch CKA", matrixOf(result),
            expected.at(features == CkaFeatures::Pooled ? "cka_minibatch_pooled" : "cka_minibatch"), 1e-6));
    }
}

TEST(Cka, InvariantToARotationAndScalingOfTheChannels)
{
    // compare_rotated.pt is the demo's first two blocks followed by 3·Q, Q orthogonal (64 × 64).
    for (const auto features : {CkaFeatures::Flattened, CkaFeatures::Pooled}) {
        CompareConfig config;
        config.layers = {"features.1", "features.0"};
        config.layersB = {"rotate"};
        config.features = features;
        const CompareResult result = compareModels(
            loadModel("compare_a.pt"), loadModel("compare_rotated.pt"), config, tensorBatches(samples(), {}, Batch));
        ASSERT_EQ(result.layersA, (std::vector<std::string>{"features.0", "features.1"}));
        EXPECT_TRUE(near("CKA(features.1, rotate)", result.ckaAt(1, 0), 1.0, 1e-6));
        EXPECT_LT(result.ckaAt(0, 0), 0.99); // an earlier layer is not the same representation
    }
}

TEST(Cka, ResNet18AgainstItselfIsOneOnTheDiagonal)
{
    const auto model = loadModel("resnet18_scripted.pt");
    CompareConfig config;
    config.layers = {"conv1", "layer*", "fc"};
    const CompareResult result = compareModels(model, model, config, tensorBatches(at::randn({8, 3, 64, 64}), {}, 4));
    ASSERT_EQ(result.layersA.size(), result.layersB.size());
    ASSERT_GT(result.layersA.size(), 6u); // conv1, layer1..4 with their blocks, fc
    // 1e-6: the Gram matrices are float32 products summed in float64 (1.5e-9 off measured under
    // the sanitizers' build, 1e-12 in the normal one).
    for (size_t i = 0; i < result.layersA.size(); ++i) {
        EXPECT_TRUE(near("diagonal at " + result.layersA[i], result.ckaAt(i, i), 1.0, 1e-6));
        for (size_t j = 0; j < result.layersB.size(); ++j)
            EXPECT_NEAR(result.ckaAt(i, j), result.ckaAt(j, i), 1e-6) << "symmetric";
    }
}

TEST(Cka, UnbiasedHsicNeedsFourSamples)
{
    const at::Tensor gram = linearGram(at::randn({3, 5}, at::kDouble));
    EXPECT_NE(errorOf([&] { unbiasedHsic(gram, gram); }).find("at least 4 samples"), std::string::npos);
}

TEST(Compare, ANaNIsNeverHidden)
{
    // A lower precision that overflowed: its NaN must show in every measure, not vanish in a max.
    const at::Tensor reference = at::randn({4, 3, 5, 5}, at::kDouble);
    at::Tensor broken = reference.clone();
    broken[2][1][3][3] = std::numeric_limits<double>::quiet_NaN();
    DifferenceAccumulator accumulator("layer");
    accumulator.add(reference, reference + 1e-3);
    accumulator.add(reference, broken);
    const LayerDifference d = accumulator.result();
    EXPECT_TRUE(std::isnan(d.maxAbsError));
    EXPECT_TRUE(std::isnan(d.maxRelativeError));
    EXPECT_TRUE(std::isnan(d.relativeL2));
    EXPECT_TRUE(std::isnan(d.cosine));
    // And the channel ranking puts a NaN channel first, the rest by size.
    at::Tensor b = at::zeros({3, 2, 2});
    b[0].fill_(1.0);
    b[2].fill_(2.0);
    b[1][0][0] = std::numeric_limits<float>::quiet_NaN();
    const InputDifference ranked = compareInputs(at::zeros({1, 3, 2, 2}), b.unsqueeze(0));
    EXPECT_EQ(ranked.ranked, (std::vector<int64_t>{1, 2, 0}));
}

TEST(Compare, CheckpointsMatchNumPyAndNameTheFirstLayerApart)
{
    const auto expected = loadExpected("compare_expected.pt");
    const auto layers = loadNames("compare_layers.json");
    CompareConfig config;
    config.mode = CompareMode::Checkpoints;
    config.layers = layers;
    const CompareResult result = compareModels(
        loadModel("compare_a.pt"), loadModel("compare_b.pt"), config, tensorBatches(samples(), {}, Batch));
    ASSERT_EQ(result.comparisons.size(), 1u);
    const Comparison& b = result.comparisons.front();
    ASSERT_EQ(b.layers.size(), layers.size());
    for (size_t i = 0; i < layers.size(); ++i) {
        const LayerDifference& d = b.layers[i];
        const std::string key = "checkpoints/" + layers[i] + "/";
        EXPECT_EQ(d.layer, layers[i]);
        EXPECT_TRUE(near(layers[i] + " CKA", d.cka, expected.at("cka_minibatch")[i][i].item<double>(), 1e-6));
        EXPECT_TRUE(near(layers[i] + " cosine", d.cosine, expected.at(key + "cosine").item<double>(), 1e-9));
        EXPECT_NEAR(d.relativeL2, expected.at(key + "relative_l2").item<double>(), 1e-9) << layers[i];
        EXPECT_NEAR(d.maxAbsError, expected.at(key + "max_abs_error").item<double>(), 1e-9) << layers[i];
        EXPECT_NEAR(d.maxRelativeError, expected.at(key + "max_relative_error").item<double>(), 1e-9) << layers[i];
    }
    // B moved features.2 and the classifier only: the first two blocks are equal, features.2 parts.
    EXPECT_EQ(b.layers[1].maxAbsError, 0.0);
    ASSERT_TRUE(b.firstOver.has_value());
    EXPECT_EQ(b.layers[*b.firstOver].layer, "features.2");
}

TEST(Compare, PrecisionDriftEqualsPyTorchsDoubleAgainstFloat)
{
    const auto expected = loadExpected("compare_expected.pt");
    const auto layers = loadNames("drift_layers.json");
    CompareConfig config;
    config.mode = CompareMode::Precision;
    config.layers = layers;
    config.precisions = {Precision::parse("float32"), Precision::parse("cpu:bfloat16")};
    const CompareResult result
        = comparePrecisions(fixture("compare_a.pt"), LoadOptions{}, config, tensorBatches(samples(), {}, Batch));
    ASSERT_EQ(result.layersA, layers);
    ASSERT_EQ(result.comparisons.size(), 2u);
    for (const Comparison& comparison : result.comparisons) {
        ASSERT_TRUE(comparison.unavailable.empty()) << comparison.unavailable;
        const std::string dtype = comparison.name == "cpu float32" ? "float32" : "bfloat16";
        for (size_t i = 0; i < layers.size(); ++i) {
            const LayerDifference& d = comparison.layers[i];
            const std::string key = "drift/" + dtype + "/" + layers[i] + "/";
            EXPECT_GT(d.maxAbsError, 0.0) << key; // float64 and lower precisions differ somewhere
            EXPECT_TRUE(
                near(key + "max_abs_error", d.maxAbsError, expected.at(key + "max_abs_error").item<double>(), 1e-6));
            EXPECT_TRUE(near(key + "max_relative_error", d.maxRelativeError,
                expected.at(key + "max_relative_error").item<double>(), 1e-6));
            EXPECT_TRUE(near(key + "relative_l2", d.relativeL2, expected.at(key + "relative_l2").item<double>(), 1e-6));
        }
    }
    // float32 stays within 1e-3 everywhere; bfloat16 (8 bits of mantissa) does not.
    EXPECT_FALSE(result.comparisons[0].firstOver.has_value());
    EXPECT_TRUE(result.comparisons[1].firstOver.has_value());
}

TEST(Compare, ACancelledRunKeepsItsBatches)
{
    CompareConfig config;
    config.layers = {"features.1"};
    int calls = 0;
    const CompareResult result = compareModels(loadModel("compare_a.pt"), loadModel("compare_b.pt"), config,
        tensorBatches(samples(), {}, Batch), [&](const Progress&) { return ++calls < 2; });
    EXPECT_TRUE(result.cancelled);
    EXPECT_EQ(result.samples, 2 * Batch);
    EXPECT_EQ(result.ckaBatches, 2);
    EXPECT_TRUE(near("CKA after two batches", result.ckaAt(0, 0), 1.0, 1e-6));
}

TEST(Compare, SaysWhatItCannotCompare)
{
    const auto a = loadModel("compare_a.pt");
    const auto rotated = loadModel("compare_rotated.pt");
    CompareConfig config;
    config.mode = CompareMode::Checkpoints;
    config.layers = {"classifier.2"};
    const std::string missing
        = errorOf([&] { compareModels(a, rotated, config, tensorBatches(samples(), {}, Batch)); });
    EXPECT_NE(missing.find("classifier.2"), std::string::npos) << missing;
    EXPECT_NE(missing.find("second checkpoint"), std::string::npos) << missing;

    config.mode = CompareMode::Cka;
    config.layers = {"nothing.*"};
    EXPECT_NE(errorOf([&] { compareModels(a, a, config, tensorBatches(samples(), {}, Batch)); }).find("nothing.*"),
        std::string::npos);
    config.layers = {};
    EXPECT_NE(
        errorOf([&] { compareModels(a, a, config, tensorBatches(samples(), {}, Batch)); }).find("choose the layers"),
        std::string::npos);

    // 36 samples in batches of 8: the last 4 count, a batch of 3 would not.
    config.layers = {"features.1"};
    const CompareResult shortBatch = compareModels(a, a, config, tensorBatches(samples().slice(0, 0, 35), {}, 8));
    EXPECT_EQ(shortBatch.ckaSamples, 32);
    ASSERT_EQ(shortBatch.warnings.size(), 1u);
    EXPECT_NE(shortBatch.warnings[0].find("3 samples"), std::string::npos) << shortBatch.warnings[0];

    EXPECT_NE(errorOf([] { Precision::parse("float8"); }).find("unknown precision 'float8'"), std::string::npos);
    EXPECT_NE(errorOf([] { Precision::parse("tpu:float32"); }).find("tpu:float32"), std::string::npos);
    if (resolveDevice("auto") == "cpu") {
        config.mode = CompareMode::Precision;
        config.precisions = {Precision::parse("cuda:float16")};
        const CompareResult noGpu
            = comparePrecisions(fixture("compare_a.pt"), LoadOptions{}, config, tensorBatches(samples(), {}, Batch));
        ASSERT_EQ(noGpu.comparisons.size(), 1u);
        EXPECT_NE(noGpu.comparisons[0].unavailable.find("was asked for, but"), std::string::npos)
            << noGpu.comparisons[0].unavailable;
    }
}

} // namespace
} // namespace torchscope::test

namespace torchscope::test {
namespace {

TEST(Device, CompareOnCudaMatchesTheCpu)
{
    if (resolveDevice("auto") == "cpu")
        GTEST_SKIP() << "no CUDA device here";
    at::globalContext().setAllowTF32CuDNN(false);
    at::globalContext().setAllowTF32CuBLAS(false);
    LoadOptions cuda;
    cuda.device = "cuda";
    CompareConfig config;
    config.mode = CompareMode::Checkpoints;
    config.layers = loadNames("compare_layers.json");
    const CompareResult onCpu = compareModels(
        loadModel("compare_a.pt"), loadModel("compare_b.pt"), config, tensorBatches(samples(), {}, Batch));
    const CompareResult onGpu = compareModels(Model::load(fixture("compare_a.pt"), cuda),
        Model::load(fixture("compare_b.pt"), cuda), config, tensorBatches(samples(), {}, Batch));
    EXPECT_TRUE(tensorsClose("CKA on CUDA", matrixOf(onGpu), matrixOf(onCpu), 1e-5));
    for (size_t i = 0; i < config.layers.size(); ++i)
        EXPECT_NEAR(onGpu.comparisons[0].layers[i].relativeL2, onCpu.comparisons[0].layers[i].relativeL2, 1e-5);
}

} // namespace
} // namespace torchscope::test
