// Grad-CAM and saliency against Python (forward hooks and autograd on the same weights), and
// activation patching / ablation against what they must do by construction.
#include "test_support.h"

#include "attribution/grad_cam.h"
#include "attribution/input_attributions.h"
#include "common/error.h"
#include "export/pt_export.h"
#include "graph/patching.h"

#include <cmath>

namespace torchscope::test {
namespace {

void expectAttribution(
    const Attribution& actual, const std::map<std::string, at::Tensor>& expected, const std::string& prefix)
{
    // Exact: the fixtures are made with the tests' thread count, so the sums run in the same order.
    const at::Tensor cam = expected.at(prefix + "/cam");
    EXPECT_EQ(at::tensor(actual.targets, at::kLong).equal(expected.at(prefix + "/targets")), true) << prefix;
    EXPECT_TRUE(tensorsClose(prefix + " cam", actual.gradCam, cam));
    EXPECT_TRUE(tensorsClose(prefix + " upsampled", actual.gradCamUpsampled, expected.at(prefix + "/upsampled")));
    EXPECT_TRUE(tensorsClose(prefix + " saliency", actual.saliency, expected.at(prefix + "/saliency")));
}

TEST(GradCam, MatchesPythonHooksOnTheDemoModel)
{
    Engine engine(Model::load(demoModelPath()));
    const auto expected = loadExpected("gradcam_expected.pt");
    const at::Tensor images = loadTensor("gradcam_input.pt");
    expectAttribution(computeAttribution(engine, images, "features.2"), expected, "features.2/predicted");
    expectAttribution(computeAttribution(engine, images, "features.1"), expected, "features.1/predicted");
    expectAttribution(computeAttribution(engine, images, "features.2", GradientTarget{9}), expected, "features.2/9");
}

TEST(GradCam, MatchesPythonHooksOnResNet18)
{
    Engine engine(loadModel("resnet18_scripted.pt"));
    const auto result = computeAttribution(engine, loadTensor("resnet18_input.pt"), "layer4");
    expectAttribution(result, loadExpected("gradcam_expected.pt"), "resnet18/layer4");
    EXPECT_EQ(result.gradCamUpsampled.sizes().vec(), (std::vector<int64_t>{2, 224, 224}));
}

TEST(GradCam, RefusesALayerWithoutSpatialMaps)
{
    Engine engine(Model::load(demoModelPath()));
    const std::string message
        = errorOf([&] { computeAttribution(engine, loadTensor("gradcam_input.pt"), "classifier.2"); });
    EXPECT_NE(message.find("'classifier.2' gives [1, 10]"), std::string::npos) << message;
}

TEST(GradCam, SaysWhyItIsZeroAfterAVisionTransformersLastBlock)
{
    // ViT-B/16 reads its score from the class token after the last block's per-token LayerNorm:
    // the patches' gradient there is exactly zero, an earlier block's is not.
    auto model = loadModel("pt2_vit_b_16.pt");
    Engine engine(model);
    const at::Tensor x = loadTensor("pt2_vit_b_16_input.pt");
    const Attribution last = computeAttribution(engine, x, "encoder.layers.encoder_layer_11", GradientTarget{3});
    EXPECT_EQ(last.gradCam.abs().max().item<float>(), 0.0f);
    ASSERT_EQ(last.notes.size(), 1u);
    EXPECT_NE(last.notes[0].find("only the class token reaches the score"), std::string::npos) << last.notes[0];
    const Attribution earlier = computeAttribution(engine, x, "encoder.layers.encoder_layer_10", GradientTarget{3});
    EXPECT_GT(earlier.gradCam.abs().max().item<float>(), 0.0f);
    EXPECT_EQ(earlier.notes.at(0), "");
}

TEST(GradCam, NormalizedMapsSpanZeroToOne)
{
    const at::Tensor map = normalizeMap(at::tensor({2.0, 4.0, 6.0}));
    EXPECT_TRUE(tensorsClose("normalized", map, at::tensor({0.0f, 0.5f, 1.0f})));
    EXPECT_EQ(normalizeMap(at::full({3}, 7.0)).sum().item<double>(), 0.0);
}

// Two images of different classes from the labelled stream: a T-shirt and an ankle boot.
std::pair<at::Tensor, at::Tensor> tShirtAndBoot()
{
    const auto dict = readTorchSaveFile(fixture("labelled_inputs.pt")).toGenericDict();
    const at::Tensor samples = dict.at("samples").toTensor(), labels = dict.at("labels").toTensor();
    const int64_t a = (labels == 0).nonzero()[0].item<int64_t>(), b = (labels == 9).nonzero()[0].item<int64_t>();
    return {samples.narrow(0, a, 1), samples.narrow(0, b, 1)};
}

TEST(IntegrationPoints, GaussLegendreHasTheTabulatedNodesAndWeights)
{
    // Abramowitz and Stegun 25.4.29 on [-1, 1], mapped to [0, 1] as Captum maps numpy's leggauss.
    const IntegrationPoints two = integrationPoints(IntegrationRule::GaussLegendre, 2);
    EXPECT_NEAR(two.alphas[0], 0.5 - 0.5 / std::sqrt(3.0), 1e-15);
    EXPECT_NEAR(two.alphas[1], 0.5 + 0.5 / std::sqrt(3.0), 1e-15);
    EXPECT_NEAR(two.weights[0], 0.5, 1e-15);
    const IntegrationPoints three = integrationPoints(IntegrationRule::GaussLegendre, 3);
    EXPECT_NEAR(three.alphas[0], 0.5 - 0.5 * std::sqrt(0.6), 1e-15);
    EXPECT_NEAR(three.alphas[1], 0.5, 1e-15);
    EXPECT_NEAR(three.weights[0], 0.5 * 5.0 / 9.0, 1e-15);
    EXPECT_NEAR(three.weights[1], 0.5 * 8.0 / 9.0, 1e-15);
    // Exact for polynomials up to degree 2n - 1: the integral of a^9 over [0, 1] with n = 5.
    const IntegrationPoints five = integrationPoints(IntegrationRule::GaussLegendre, 5);
    double integral = 0.0;
    for (size_t i = 0; i < five.alphas.size(); ++i)
        integral += five.weights[i] * std::pow(five.alphas[i], 9);
    EXPECT_NEAR(integral, 0.1, 1e-14);
}

TEST(IntegrationPoints, RiemannRulesAsCaptumDefinesThem)
{
    const IntegrationPoints trapezoid = integrationPoints(IntegrationRule::RiemannTrapezoid, 4);
    EXPECT_EQ(trapezoid.alphas, (std::vector<double>{0.0, 1.0 / 3.0, 2.0 / 3.0, 1.0}));
    EXPECT_EQ(trapezoid.weights, (std::vector<double>{0.125, 0.25, 0.25, 0.125}));
    EXPECT_EQ(integrationPoints(IntegrationRule::RiemannLeft, 4).alphas, (std::vector<double>{0.0, 0.25, 0.5, 0.75}));
    EXPECT_EQ(integrationPoints(IntegrationRule::RiemannRight, 4).alphas, (std::vector<double>{0.25, 0.5, 0.75, 1.0}));
    EXPECT_EQ(
        integrationPoints(IntegrationRule::RiemannMiddle, 4).alphas, (std::vector<double>{0.125, 0.375, 0.625, 0.875}));
    EXPECT_THROW(integrationPoints(IntegrationRule::RiemannTrapezoid, 1), Error);
    EXPECT_THROW(parseIntegrationRule("simpson"), Error);
}

TEST(Patching, BsLastLayerInAMakesAPredictBsClass)
{
    Engine engine(Model::load(demoModelPath()));
    const auto [a, b] = tShirtAndBoot();
    const PatchRuns runs = patchActivation(engine, {a}, {b}, "classifier.2");
    const int64_t predictedA = runs.a.tensor("output").argmax(1).item<int64_t>();
    const int64_t predictedB = runs.b.tensor("output").argmax(1).item<int64_t>();
    ASSERT_NE(predictedA, predictedB) << "the two images must be told apart for the test to mean anything";
    EXPECT_EQ(runs.patched.tensor("output").argmax(1).item<int64_t>(), predictedB);
    EXPECT_TRUE(tensorsClose("patched output", runs.patched.tensor("output"), runs.b.tensor("output")));
}

TEST(Patching, LaterLayersFollowThePatchedLayer)
{
    // features.2 reads only features.1, so patching features.1 with B's makes features.2 B's too,
    // while the layer before the patch stays A's.
    Engine engine(Model::load(demoModelPath()));
    const auto [a, b] = tShirtAndBoot();
    const PatchRuns runs = patchActivation(
        engine, {a}, {b}, "features.1", {GrabSpec::parse("features.0"), GrabSpec::parse("features.2")});
    EXPECT_TRUE(tensorsClose("features.2", runs.patched.tensor("features.2"), runs.b.tensor("features.2"), 1e-6));
    EXPECT_TRUE(tensorsClose("features.0", runs.patched.tensor("features.0"), runs.a.tensor("features.0")));
    EXPECT_FALSE(at::allclose(runs.a.tensor("features.2"), runs.b.tensor("features.2")));
}

TEST(Patching, RefusesActivationsOfDifferentShapes)
{
    Engine engine(loadModel("resnet18_scripted.pt"));
    const at::Tensor a = loadTensor("resnet18_input.pt");
    const std::string message = errorOf([&] { patchActivation(engine, {a}, {a.narrow(0, 0, 1)}, "layer3"); });
    EXPECT_NE(message.find("[2, 256, 14, 14] for A but [1, 256, 14, 14] for B"), std::string::npos) << message;
}

TEST(Ablation, ZeroedChannelsMatchAPythonHookThatZeroesThem)
{
    Engine engine(loadModel("resnet18_scripted.pt"));
    const auto runs = ablateChannels(engine, {loadTensor("resnet18_input.pt")}, "layer2", {0, 5, 7});
    const auto expected = loadExpected("resnet18_expected.pt");
    EXPECT_TRUE(tensorsClose("ablated", runs.ablated.tensor("output"), expected.at("edit:zero:layer2"), 1e-5));
    EXPECT_TRUE(tensorsClose("original", runs.original.tensor("output"), expected.at("output"), 1e-5));
    EXPECT_NE(errorOf([&] {
        ablateChannels(engine, {loadTensor("resnet18_input.pt")}, "layer2", {128});
    }).find("'layer2' has 128 channels; channel 128 does not exist"),
        std::string::npos);
}

} // namespace
} // namespace torchscope::test
