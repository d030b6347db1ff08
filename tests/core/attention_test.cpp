// Attention in core: rollout and the per-head figures on attention worked out by hand, the token
// layout of ViT-B/16, the errors a researcher meets, LeGrad's routing of the attention through
// the probabilities, and on CUDA (with a GPU) the same probabilities as on the CPU. The grab against
// eager PyTorch, timm, Swin and the math kernel is tests/cli/test_attention.py.
#include "test_support.h"

#include "attention/attention_maps.h"
#include "attention/attention_statistics.h"
#include "graph/engine.h"
#include "model/model.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/cuda.h>

#include <cmath>

namespace torchscope::test {
namespace {

at::Tensor square(std::initializer_list<double> values, int64_t side)
{
    return at::tensor(std::vector<double>(values), at::kDouble).view({side, side});
}

TEST(AttentionRollout, AddsTheResidualAndMultipliesTheLayers)
{
    // One head, two tokens: 0.5 A + 0.5 I = [[1, 0], [0.25, 0.75]], rows already summing to 1.
    const at::Tensor a = square({1.0, 0.0, 0.5, 0.5}, 2).view({1, 1, 2, 2});
    EXPECT_TRUE(tensorsClose(
        "one layer", attentionRollout({a}, "mean", 0.0)[0].to(at::kDouble), square({1.0, 0.0, 0.25, 0.75}, 2), 1e-7));
    EXPECT_TRUE(tensorsClose("two layers", attentionRollout({a, a}, "mean", 0.0)[0].to(at::kDouble),
        square({1.0, 0.0, 0.4375, 0.5625}, 2), 1e-7));
}

TEST(AttentionRollout, FusesHeadsAndDiscardsTheLowestButNeverTheClassTokensOwn)
{
    const at::Tensor heads = at::stack({square({1.0, 0.0, 0.5, 0.5}, 2), square({0.0, 1.0, 1.0, 0.0}, 2)}).unsqueeze(0);
    // max = [[1, 1], [1, 0.5]]; + I, halved: [[1, 0.5], [0.5, 0.75]]; rows normalised.
    EXPECT_TRUE(tensorsClose("max", attentionRollout({heads}, "max", 0.0)[0].to(at::kDouble),
        square({2.0 / 3, 1.0 / 3, 0.4, 0.6}, 2), 1e-7));
    // min = [[0, 0], [0.5, 0]]: [[0.5, 0], [0.25, 0.5]] normalised.
    EXPECT_TRUE(tensorsClose("min", attentionRollout({heads}, "min", 0.0)[0].to(at::kDouble),
        square({1.0, 0.0, 1.0 / 3, 2.0 / 3}, 2), 1e-7));
    // The lowest quarter is entry [0, 0] (0.05): it stays. Half: 0.05 stays, 0.3 goes.
    const at::Tensor a = square({0.05, 0.95, 0.3, 0.7}, 2).view({1, 1, 2, 2});
    EXPECT_TRUE(tensorsClose("discard 0.25", attentionRollout({a}, "mean", 0.25)[0].to(at::kDouble),
        square({0.525, 0.475, 0.15, 0.85}, 2), 1e-7));
    EXPECT_TRUE(tensorsClose("discard 0.5", attentionRollout({a}, "mean", 0.5)[0].to(at::kDouble),
        square({0.525, 0.475, 0.0, 1.0}, 2), 1e-7));
    EXPECT_NE(errorOf([&] { attentionRollout({a}, "median", 0.0); }).find("mean, max or min"), std::string::npos);
    EXPECT_NE(errorOf([&] { attentionRollout({a}, "mean", 1.0); }).find("[0, 1)"), std::string::npos);
}

TEST(AttentionStatistics, EntropyAndDistanceOfAttentionWorkedOutByHand)
{
    // A class token and a 2 x 2 grid: every query attends evenly to the 5 keys: entropy ln 5.
    const at::Tensor even = at::full({1, 1, 5, 5}, 0.2);
    EXPECT_NEAR(attentionEntropy(even).item<double>(), std::log(5.0), 1e-6);
    // Each patch query attends to its right or left neighbour only: distance 1 patch.
    at::Tensor p = at::zeros({1, 1, 5, 5});
    p[0][0][0][0] = 1.0;
    p[0][0][1][2] = 1.0;
    p[0][0][2][1] = 1.0;
    p[0][0][3][4] = 1.0;
    p[0][0][4][3] = 1.0;
    EXPECT_NEAR(attentionEntropy(p).item<double>(), 0.0, 1e-7);
    EXPECT_NEAR(attentionDistance(p, 1, 2, 2).item<double>(), 1.0, 1e-6);
    // Half to the diagonal neighbour (√2), half to itself (0).
    p = at::zeros({1, 1, 5, 5});
    for (int64_t q = 1; q < 5; ++q) {
        p[0][0][q][q] = 0.5;
        p[0][0][q][5 - q] = 0.5;
    }
    EXPECT_NEAR(attentionDistance(p, 1, 2, 2).item<double>(), 0.5 * std::sqrt(2.0), 1e-6);
}

TEST(AttentionLayers, ViTB16sLayoutAndTheErrorsAResearcherMeets)
{
    const auto model = loadModel("vit_b_16_scripted.pt");
    const std::vector<std::string> layers = attentionLayers(*model, {});
    ASSERT_EQ(layers.size(), 12u);
    EXPECT_EQ(layers.front(), "encoder.layers.encoder_layer_0.self_attention");
    EXPECT_EQ(layers.back(), "encoder.layers.encoder_layer_11.self_attention");
    EXPECT_EQ(attentionLayers(*model, {"encoder.layers.*"}), layers); // the glob keeps those with attention

    const TokenLayout vit = tokenLayout(*model, 197, 224, 224, 0);
    EXPECT_TRUE(vit.spatial);
    EXPECT_EQ(vit.prefix, 1);
    EXPECT_EQ(vit.gridHeight, 14);
    EXPECT_EQ(vit.patchSize, 16);
    EXPECT_FALSE(tokenLayout(*model, 49, 224, 224, 0).spatial); // Swin's windows

    const std::string block = errorOf([&] { attentionLayers(*model, {"encoder.layers.encoder_layer_0"}); });
    EXPECT_NE(block.find("computes no attention"), std::string::npos) << block;
    EXPECT_NE(block.find("encoder.layers.encoder_layer_0.self_attention"), std::string::npos) << block;
    Engine engine(model);
    Request request;
    request.grabs = {GrabSpec::parse("encoder.layers.encoder_layer_0.mlp:attention")};
    const std::string mlp = errorOf([&] { engine.run(request, {loadTensor("vit_input.pt")}); });
    EXPECT_NE(mlp.find("computes no attention"), std::string::npos) << mlp;
}

TEST(AttentionGrab, LeGradsRoutingKeepsTheOutputAndLetsGradientsReachTheProbabilities)
{
    const auto model = loadModel("vit_b_16_scripted.pt");
    Engine engine(model);
    const at::Tensor x = loadTensor("vit_input.pt");
    const std::string key = "encoder.layers.encoder_layer_11.self_attention:attention";
    Request grab;
    grab.grabs = {GrabSpec::parse(key)};
    const RunResult plain = engine.run(grab, {x});
    Request routed = grab;
    routed.attentionInPath = true;
    const RunResult kept = engine.runWithGraph(routed, {x.clone().requires_grad_(true)});
    // scaled_dot_product_attention's output is now probabilities @ v: the same to rounding.
    EXPECT_TRUE(tensorsClose("probabilities", kept.tensor(key), plain.tensor(key), 1e-6));
    EXPECT_TRUE(tensorsCloseRelative("output", kept.tensor("output"), plain.tensor("output"), 1e-5));
    const at::Tensor score = kept.tensor("output").select(1, 3).sum();
    const auto gradient = torch::autograd::grad({score}, {kept.tensor(key)}).at(0);
    ASSERT_TRUE(gradient.defined());
    EXPECT_GT(gradient.abs().max().item<double>(), 0.0);
}

TEST(Device, AttentionOnCudaMatchesTheCpu)
{
    if (!torch::cuda::is_available())
        GTEST_SKIP() << "no CUDA device here";
    at::globalContext().setAllowTF32CuBLAS(false);
    at::globalContext().setAllowTF32CuDNN(false);
    LoadOptions cuda;
    cuda.device = "cuda";
    Engine onGpu(Model::load(fixture("vit_b_16_scripted.pt"), cuda));
    Engine onCpu(loadModel("vit_b_16_scripted.pt"));
    const at::Tensor x = loadTensor("vit_input.pt");
    Request grab;
    grab.grabs = {GrabSpec::parse("encoder.layers.*.self_attention:attention")};
    const RunResult gpu = onGpu.run(grab, {x});
    const RunResult cpu = onCpu.run(grab, {x});
    for (const auto* layer : {"encoder.layers.encoder_layer_0", "encoder.layers.encoder_layer_11"}) {
        const std::string key = std::string(layer) + ".self_attention:attention";
        EXPECT_TRUE(gpu.tensor(key).is_cuda());
        EXPECT_TRUE(tensorsClose(key + " (cuda)", gpu.tensor(key).cpu(), cpu.tensor(key), 1e-5));
    }
    // The grabs leave the GPU's output as it is without them.
    EXPECT_TRUE(at::equal(gpu.tensor("output"), onGpu.run(Request{}, {x}).tensor("output")));
}

} // namespace
} // namespace torchscope::test
