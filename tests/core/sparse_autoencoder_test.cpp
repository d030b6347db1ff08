// The TopK sparse autoencoder (sae/sparse_autoencoder.h): a planted dictionary (known unit
// directions, k of them active per vector) recovered by training, the codes and reconstruction
// against the formula written out with the saved weights, the step's FVU and L0 against a
// recomputation (and no codes where every pre-activation is negative), a save / load round trip in SAELens's layout,
// a training checkpoint resumed equal to a run that never stopped, Matryoshka's loss against its
// prefixes' errors written out (and its first latents better alone than a plain SAE's), the
// geometric median against the median of points on a line and its optimality condition, and bad input.
#include "sae/sparse_autoencoder.h"

#include "common/error.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace torchscope::test {
namespace {

// Vectors that are each the sum of `active` of the dictionary's unit rows, with coefficients in
// [0.5, 2], plus a constant offset (the SAE's b_dec has something to find).
struct Planted {
    at::Tensor dictionary; // [atoms, d_in], unit rows
    at::Tensor offset; // [d_in]
    at::Generator generator;

    Planted(int64_t atoms, int64_t dIn, uint64_t seed)
        : generator(at::make_generator<at::CPUGeneratorImpl>(seed))
    {
        dictionary = at::randn({atoms, dIn}, generator, at::kFloat);
        dictionary = dictionary / dictionary.norm(2, {1}, true);
        offset = at::randn({dIn}, generator, at::kFloat) * 0.5;
    }

    at::Tensor draw(int64_t n, int64_t active)
    {
        const int64_t atoms = dictionary.size(0);
        const at::Tensor chosen
            = at::rand({n, atoms}, generator, at::kFloat).argsort(/*stable=*/false, /*dim=*/1).narrow(1, 0, active);
        const at::Tensor coefficients = at::rand({n, active}, generator, at::kFloat) * 1.5 + 0.5;
        at::Tensor codes = at::zeros({n, atoms}).scatter_(1, chosen, coefficients);
        return codes.matmul(dictionary) + offset;
    }
};

double fvu(const at::Tensor& x, const at::Tensor& reconstruction)
{
    return (x - reconstruction).pow(2).sum().item<double>() / (x - x.mean(0, true)).pow(2).sum().item<double>();
}

// The share of the dictionary's atoms that some decoder row points along (cosine > 0.9).
double recovered(const at::Tensor& dictionary, const at::Tensor& decoder)
{
    const at::Tensor rows = decoder / decoder.norm(2, {1}, true);
    const at::Tensor best = std::get<0>(dictionary.matmul(rows.t()).max(1));
    return best.gt(0.9).to(at::kDouble).mean().item<double>();
}

SaeConfig plantedConfig(bool batchTopK)
{
    SaeConfig c;
    c.dIn = 24;
    c.dSae = 96;
    c.k = 3;
    c.batchTopK = batchTopK;
    c.learningRate = 3e-3;
    c.warmupSteps = 20;
    c.deadAfterVectors = 20'000;
    c.totalSteps = 1000;
    c.seed = 3;
    return c;
}

// The smaller SAE of the tests that check formulas, not recovery: 20 dimensions, `latents` latents.
SaeConfig smallConfig(int64_t latents)
{
    SaeConfig c = plantedConfig(false);
    c.dIn = 20;
    c.dSae = latents;
    return c;
}

SaeStepMetrics trainPlanted(SparseAutoencoder& sae, Planted& planted, int steps)
{
    SaeStepMetrics last;
    for (int i = 0; i < steps; ++i)
        last = sae.trainStep(planted.draw(512, 3));
    return last;
}

TEST(SparseAutoencoder, RecoversAPlantedDictionary)
{
    for (const bool batchTopK : {false, true}) {
        Planted planted(32, 24, 11);
        SparseAutoencoder sae(plantedConfig(batchTopK));
        const SaeStepMetrics last = trainPlanted(sae, planted, 1000);
        // Three latents for each atom: some find none and die; those that found one keep firing.
        EXPECT_GT(last.deadFraction, 0.0) << "no latent died";
        EXPECT_LT(last.deadFraction, 0.9) << "the latents in use are counted dead";
        const at::Tensor x = planted.draw(4096, 3);
        const double error = fvu(x, sae.reconstruct(x));
        const double share = recovered(planted.dictionary, sae.weights().at("W_dec"));
        const std::string what = batchTopK ? "BatchTopK" : "TopK";
        EXPECT_LE(error, 0.05) << what << ": FVU on new vectors";
        EXPECT_GE(share, 0.9) << what << ": atoms recovered (cosine > 0.9)";
        const at::Tensor codes = sae.encode(x);
        const double l0 = codes.ne(0).sum(1).to(at::kDouble).mean().item<double>();
        if (batchTopK)
            EXPECT_NEAR(l0, 3.0, 1.0) << what << ": L0 at inference";
        else
            EXPECT_LE(codes.ne(0).sum(1).max().item<int64_t>(), 3) << what << ": at most k active";
    }
}

TEST(SparseAutoencoder, CodesAndReconstructionAreTheFormulaOfItsWeights)
{
    Planted planted(32, 20, 5);
    SaeConfig c = smallConfig(40);
    c.k = 4;
    SparseAutoencoder sae(c);
    trainPlanted(sae, planted, 30);
    const at::Tensor x = planted.draw(64, 3) * 7.0; // another scale than it trained on
    const auto w = sae.weights();
    const at::Tensor pre = (x - w.at("b_dec")).matmul(w.at("W_enc")) + w.at("b_enc");
    auto [values, indices] = pre.topk(c.k, 1);
    const at::Tensor codes = at::zeros_like(pre).scatter_(1, indices, values.relu());
    const at::Tensor expected = codes.matmul(w.at("W_dec")) + w.at("b_dec");
    EXPECT_TRUE(at::allclose(sae.encode(x), codes, 1e-4, 1e-4));
    const at::Tensor got = sae.reconstruct(x);
    EXPECT_TRUE(at::allclose(got, expected, 1e-4, 1e-3)) << (got - expected).abs().max().item<double>();
}

TEST(SparseAutoencoder, AStepReportsTheFvuAndL0OfTheBatchItWasGiven)
{
    Planted planted(32, 20, 6);
    SaeConfig c = smallConfig(40);
    SparseAutoencoder sae(c);
    sae.trainStep(planted.draw(256, 3)); // initialises
    const at::Tensor x = planted.draw(256, 3);
    const at::Tensor before = sae.reconstruct(x);
    const double l0 = sae.encode(x).ne(0).sum(1).to(at::kDouble).mean().item<double>();
    const SaeStepMetrics m = sae.trainStep(x);
    EXPECT_NEAR(m.fvu, fvu(x, before), 1e-4);
    EXPECT_NEAR(m.l0, l0, 1e-9);
    EXPECT_EQ(m.vectors, 512);
    EXPECT_TRUE(std::isfinite(m.loss));
}

TEST(SparseAutoencoder, NegativePreActivationsGiveNoCodesInTrainingAsInEncoding)
{
    Planted planted(16, 20, 9);
    SaeConfig c = smallConfig(8); // fewer latents than dimensions: vectors with every pre-activation −1 exist
    c.k = 4;
    SparseAutoencoder sae(c);
    sae.trainStep(planted.draw(256, 3));
    const auto w = sae.weights();
    // Pre-activations (x − b_dec) W_enc + b_enc of −1 to −2.
    const at::Tensor target = -(at::rand({64, c.dSae}) + 1.0) - w.at("b_enc");
    const at::Tensor x = w.at("b_dec") + target.matmul(at::linalg_pinv(w.at("W_enc")));
    EXPECT_EQ(sae.encode(x).ne(0).sum().item<int64_t>(), 0);
    const at::Tensor before = sae.reconstruct(x); // b_dec alone
    const SaeStepMetrics m = sae.trainStep(x);
    EXPECT_NEAR(m.fvu, fvu(x, before), 1e-4) << "the step reconstructed from negative codes";
    EXPECT_EQ(m.l0, 0.0);
}

TEST(SparseAutoencoder, SavedInSaeLensLayoutAndReadBack)
{
    Planted planted(32, 20, 7);
    SaeConfig c = smallConfig(40);
    SparseAutoencoder sae(c);
    trainPlanted(sae, planted, 20);
    const auto folder = std::filesystem::temp_directory_path() / "torchscope_sae_test";
    std::filesystem::remove_all(folder);
    sae.save(folder.string(), SaeOrigin{"layer3", "all", "abc123", -1, {}});
    std::ifstream in(folder / "cfg.json");
    const auto cfg = nlohmann::json::parse(in);
    EXPECT_EQ(cfg["d_in"], 20);
    EXPECT_EQ(cfg["d_sae"], 40);
    EXPECT_EQ(cfg["k"], c.k);
    EXPECT_EQ(cfg["architecture"], "topk");
    EXPECT_EQ(cfg["metadata"]["hook_name"], "layer3");
    SaeOrigin origin;
    const SparseAutoencoder back = SparseAutoencoder::load(folder.string(), &origin);
    EXPECT_EQ(origin.modelSha256, "abc123");
    const at::Tensor x = planted.draw(32, 3);
    EXPECT_TRUE(at::allclose(back.encode(x), sae.encode(x), 1e-5, 1e-5));
    EXPECT_TRUE(at::allclose(back.reconstruct(x), sae.reconstruct(x), 1e-5, 1e-4));

    // A cfg whose d_in does not match the weights says which tensor and what it should be.
    auto wrong = cfg;
    wrong["d_in"] = 21;
    std::ofstream(folder / "cfg.json") << wrong.dump();
    try {
        SparseAutoencoder::load(folder.string());
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("W_enc is [20, 40]"), std::string::npos) << e.what();
    }
    std::filesystem::remove_all(folder);
}

TEST(SparseAutoencoder, ACheckpointResumedTrainsOnAsIfNeverStopped)
{
    for (const bool batchTopK : {false, true}) {
        SaeConfig c = smallConfig(120); // more latents than the 32 atoms: some go unused
        c.batchTopK = batchTopK;
        c.deadAfterVectors = 300; // latents die within the run: AuxK and the counters matter
        c.totalSteps = 8; // the decay's schedule is part of the state
        c.warmupSteps = 2;
        Planted planted(32, 20, 5);
        std::vector<at::Tensor> batches;
        for (int i = 0; i < 8; ++i)
            batches.push_back(planted.draw(256, 3));
        SparseAutoencoder straight(c);
        SaeStepMetrics last;
        for (const auto& batch : batches)
            last = straight.trainStep(batch);
        ASSERT_GT(last.deadFraction, 0.0) << "the run should have dead latents for AuxK to act on";

        const auto folder = std::filesystem::temp_directory_path() / "torchscope_sae_checkpoint_test";
        std::filesystem::remove_all(folder);
        {
            SparseAutoencoder first(c);
            for (size_t i = 0; i < 4; ++i)
                first.trainStep(batches[i]);
            first.saveCheckpoint(folder.string());
        }
        SparseAutoencoder resumed = SparseAutoencoder::resume(folder.string());
        EXPECT_EQ(resumed.steps(), 4);
        EXPECT_EQ(resumed.vectorsSeen(), 4 * 256);
        SaeStepMetrics resumedLast;
        for (size_t i = 4; i < batches.size(); ++i)
            resumedLast = resumed.trainStep(batches[i]);
        EXPECT_DOUBLE_EQ(resumedLast.loss, last.loss) << (batchTopK ? "BatchTopK" : "TopK");
        EXPECT_DOUBLE_EQ(resumedLast.deadFraction, last.deadFraction);
        const auto a = straight.weights(), b = resumed.weights();
        for (const auto& [key, value] : a)
            EXPECT_TRUE(at::equal(value, b.at(key))) << key << (batchTopK ? " (BatchTopK)" : "");

        // A checkpoint that lost a tensor, or whose sizes disagree with its JSON, is refused by name.
        std::filesystem::rename(folder / "trainer_state.safetensors", folder / "moved.safetensors");
        try {
            SparseAutoencoder::resume(folder.string());
            FAIL() << "no error";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("trainer_state.safetensors"), std::string::npos) << e.what();
        }
        std::filesystem::remove_all(folder);
    }
    try {
        SparseAutoencoder::resume("/nonexistent/sae");
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("no trainer_state.json"), std::string::npos) << e.what();
    }
}

// The squared error per vector of a reconstruction from the codes of the latents below `width`
// only, written out with the saved weights (raw space).
double prefixError(
    const std::map<std::string, at::Tensor>& w, const at::Tensor& codes, const at::Tensor& x, int64_t width)
{
    const at::Tensor kept = codes.narrow(1, 0, width);
    const at::Tensor reconstruction = kept.matmul(w.at("W_dec").narrow(0, 0, width)) + w.at("b_dec");
    return (x - reconstruction).pow(2).sum(1).mean().item<double>();
}

TEST(SparseAutoencoder, MatryoshkaAddsEachPrefixsErrorToTheLoss)
{
    for (const bool batchTopK : {false, true}) {
        Planted planted(32, 20, 8);
        SaeConfig c = smallConfig(40);
        c.k = 4;
        c.batchTopK = batchTopK;
        c.matryoshkaWidths = {5, 16};
        SparseAutoencoder sae(c);
        const at::Tensor first = planted.draw(256, 3);
        sae.trainStep(first); // initialises: the scale s = √d_in / E‖x‖ of this batch
        const double s = std::sqrt(20.0) / first.norm(2, {1}).mean().item<double>();
        const at::Tensor x = planted.draw(256, 3);
        const auto w = sae.weights();
        // The codes the step computes: TopK's from the formula, BatchTopK's the k·B largest of the batch.
        const at::Tensor pre = ((x - w.at("b_dec")).matmul(w.at("W_enc")) + w.at("b_enc")).relu();
        at::Tensor codes;
        if (batchTopK) {
            const at::Tensor threshold = std::get<0>(pre.flatten().topk(4 * 256)).min();
            codes = pre * pre.ge(threshold).logical_and(pre.gt(0)).to(pre.dtype());
        } else {
            auto [values, indices] = pre.topk(4, 1);
            codes = at::zeros_like(pre).scatter_(1, indices, values);
        }
        const double full = prefixError(w, codes, x, 40) * s * s; // the step's space is x · s
        const double inner = (prefixError(w, codes, x, 5) + prefixError(w, codes, x, 16)) * s * s;
        const SaeStepMetrics m = sae.trainStep(x);
        const std::string what = batchTopK ? "BatchTopK" : "TopK";
        EXPECT_NEAR(m.mse, full, 1e-4 * full) << what;
        EXPECT_NEAR(m.matryoshkaMse, inner, 1e-4 * inner) << what;
        EXPECT_GT(inner, 2.0 * full) << what << ": prefixes of 5 and 16 of 40 latents reconstruct worse";
        EXPECT_NEAR(m.loss, m.mse + m.matryoshkaMse + c.auxCoefficient * m.auxLoss, 1e-5 * m.loss) << what;
    }
}

TEST(SparseAutoencoder, MatryoshkaTeachesItsFirstLatentsToReconstructAlone)
{
    // The same planted data, the same seed: the plain SAE's first 16 latents are 16 of 96 with no
    // order; Matryoshka's are trained to carry the most they can on their own.
    double prefix[2] = {0.0, 0.0}, whole[2] = {0.0, 0.0};
    for (const bool matryoshka : {false, true}) {
        Planted planted(32, 24, 12);
        SaeConfig c = plantedConfig(false);
        if (matryoshka)
            c.matryoshkaWidths = {16};
        SparseAutoencoder sae(c);
        trainPlanted(sae, planted, 400);
        const at::Tensor x = planted.draw(4096, 3);
        const at::Tensor codes = sae.encode(x);
        const auto w = sae.weights();
        const double variance = (x - x.mean(0, true)).pow(2).sum(1).mean().item<double>();
        prefix[matryoshka] = prefixError(w, codes, x, 16) / variance;
        whole[matryoshka] = fvu(x, sae.reconstruct(x));
    }
    EXPECT_LT(prefix[1], 0.8 * prefix[0])
        << "the first 16 latents alone: FVU " << prefix[1] << " with Matryoshka, " << prefix[0] << " without";
    EXPECT_LE(whole[1], 0.1) << "all latents together still reconstruct";
}

TEST(SparseAutoencoder, MatryoshkaWidthsAreSavedAndResumed)
{
    Planted planted(32, 20, 4);
    SaeConfig c = smallConfig(40);
    c.matryoshkaWidths = {8, 24};
    c.geometricMedianInit = true;
    SparseAutoencoder sae(c);
    trainPlanted(sae, planted, 3);
    const auto folder = std::filesystem::temp_directory_path() / "torchscope_sae_matryoshka";
    std::filesystem::remove_all(folder);
    sae.save(folder.string(), SaeOrigin{"layer", "all", "", -1, {}});
    sae.saveCheckpoint(folder.string());
    EXPECT_EQ(SparseAutoencoder::load(folder.string()).config().matryoshkaWidths, c.matryoshkaWidths);
    const SparseAutoencoder resumed = SparseAutoencoder::resume(folder.string());
    EXPECT_EQ(resumed.config().matryoshkaWidths, c.matryoshkaWidths);
    EXPECT_TRUE(resumed.config().geometricMedianInit);
    std::filesystem::remove_all(folder);
}

TEST(GeometricMedian, IsTheMiddleOfPointsOnALineAndWhereTheUnitVectorsCancel)
{
    // On a line, the median: 2 of {0, 1, 2, 10, 11}, wherever the outliers lie.
    const at::Tensor line
        = at::tensor({0.0, 1.0, 2.0, 10.0, 11.0}, at::kDouble).unsqueeze(1) * at::tensor({1.0, 2.0}, at::kDouble);
    EXPECT_TRUE(at::allclose(geometricMedian(line, 1000, 1e-12), at::tensor({2.0, 4.0}, at::kDouble), 1e-6, 1e-6))
        << geometricMedian(line, 1000, 1e-12);
    // In general: where the unit vectors from the points to it sum to zero, and nearer in summed
    // distance than the mean, with outliers the mean follows.
    at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(5);
    at::Tensor points = at::randn({200, 6}, generator, at::kDouble);
    points.narrow(0, 0, 20).add_(25.0); // a tenth far away
    const at::Tensor median = geometricMedian(points, 1000, 1e-14);
    const at::Tensor toMedian = median - points;
    const at::Tensor pull = (toMedian / toMedian.norm(2, {1}, true)).sum(0);
    EXPECT_LT(pull.norm().item<double>(), 1e-6 * 200) << pull;
    const auto summed = [&](const at::Tensor& m) { return (points - m).norm(2, {1}).sum().item<double>(); };
    EXPECT_LT(summed(median), summed(points.mean(0)));
    EXPECT_LT((median - points.narrow(0, 20, 180).mean(0)).norm().item<double>(), 1.0) << "pulled by the outliers";
    EXPECT_THROW(geometricMedian(at::empty({0, 3})), Error);
}

TEST(SparseAutoencoder, BDecCanStartAtTheFirstBatchsGeometricMedian)
{
    Planted planted(32, 20, 10);
    at::Tensor first = planted.draw(256, 3);
    first.narrow(0, 0, 20).add_(40.0); // outliers that move the mean, not the median
    for (const bool median : {false, true}) {
        SaeConfig c = smallConfig(40);
        c.geometricMedianInit = median;
        c.warmupSteps = 1000; // the first step moves b_dec by Adam's 4e-4 / 1000 an element at most
        SparseAutoencoder sae(c);
        sae.trainStep(first);
        const at::Tensor expected = median ? geometricMedian(first.to(at::kDouble)).to(at::kFloat) : first.mean(0);
        const at::Tensor got = sae.weights().at("b_dec");
        EXPECT_TRUE(at::allclose(got, expected, 1e-4, 1e-3))
            << (median ? "median" : "mean") << ": off by " << (got - expected).abs().max().item<double>();
    }
}

TEST(SparseAutoencoder, BadInputSaysWhatIsWrong)
{
    SaeConfig c;
    c.dIn = 8;
    c.dSae = 16;
    c.k = 17;
    EXPECT_THROW(SparseAutoencoder{c}, Error);
    c.k = 4;
    SparseAutoencoder sae(c);
    try {
        sae.trainStep(at::randn({4, 9}));
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("[N, 8]; got [4, 9]"), std::string::npos) << e.what();
    }
    EXPECT_THROW(sae.trainStep(at::zeros({4, 8})), Error);
    EXPECT_THROW(SparseAutoencoder::load("/nonexistent/sae"), Error);
    for (const std::vector<int64_t>& widths :
        {std::vector<int64_t>{8, 4}, std::vector<int64_t>{16}, std::vector<int64_t>{0}}) {
        SaeConfig m = c;
        m.matryoshkaWidths = widths;
        try {
            SparseAutoencoder{m};
            FAIL() << "no error";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("Matryoshka widths must rise"), std::string::npos) << e.what();
        }
    }
}

} // namespace
} // namespace torchscope::test
