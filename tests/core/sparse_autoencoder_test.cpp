// The TopK sparse autoencoder (sae/sparse_autoencoder.h): a planted dictionary (known unit
// directions, k of them active per vector) recovered by training, the codes and reconstruction
// against the formula written out with the saved weights, the step's FVU and L0 against a
// recomputation (and no codes where every pre-activation is negative), a save / load round trip in SAELens's layout,
// a training checkpoint resumed equal to a run that never stopped, and bad input.
#include "sae/sparse_autoencoder.h"

#include "common/error.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
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
}

} // namespace
} // namespace torchscope::test
