// Gradients of the target class score (summed over the batch) w.r.t. module outputs, against
// torch.autograd.grad in Python on the same weights.
#include "test_support.h"

#include <nlohmann/json.hpp>

#include <fstream>

namespace torchscope::test {
namespace {

TEST(Gradient, MatchesPythonAutograd)
{
    auto model = loadModel("resnet18_scripted.pt");
    Engine engine(model);
    Request request;
    for (const char* path : {"conv1", "bn1", "layer1", "layer2.0.conv2", "layer3", "layer4", "fc"})
        request.grabs.push_back(GrabSpec::parse(std::string(path) + ":grad"));
    request.targetClass = 3;
    const auto result = engine.run(request, {loadTensor("resnet18_input.pt")});
    const auto expected = loadExpected("resnet18_expected.pt");
    for (const auto& grab : request.grabs) {
        const std::string key = grab.selector + ":grad";
        // bn1 is followed by ReLU(inplace=True): the gradient must be of bn1's own output.
        EXPECT_TRUE(tensorsCloseRelative(key, result.tensor(key), expected.at(key), 1e-5));
    }
    EXPECT_TRUE(tensorsClose("output", result.tensor("output"), expected.at("output"), 1e-5));
}

TEST(Gradient, TracedModelToo)
{
    auto model = loadModel("resnet18_traced.pt");
    Engine engine(model);
    Request request;
    request.grabs = {GrabSpec::parse("layer3:grad"), GrabSpec::parse("layer3")};
    request.targetClass = 3;
    const auto result = engine.run(request, {loadTensor("resnet18_input.pt")});
    const auto expected = loadExpected("resnet18_expected.pt");
    EXPECT_TRUE(tensorsCloseRelative("layer3:grad", result.tensor("layer3:grad"), expected.at("layer3:grad"), 1e-5));
    EXPECT_TRUE(tensorsClose("layer3", result.tensor("layer3"), expected.at("layer3"), 1e-5));
}

// Models saved by the environment's PyTorch 2.x (ViT, Swin, ResNet-50, a block that calls
// scaled_dot_product_attention, scripted and traced): gradients of the class-3 score with respect
// to the layers pt2_models.json names, against torch.autograd.grad through eager hooks.
class GradientOfPyTorch2Model : public ::testing::TestWithParam<std::string> { };

TEST_P(GradientOfPyTorch2Model, MatchesPythonAutograd)
{
    const std::string name = GetParam();
    std::ifstream file(fixture("pt2_models.json"));
    const auto layers = nlohmann::json::parse(file).at(name).get<std::vector<std::string>>();
    auto model = loadModel("pt2_" + name + ".pt");
    Engine engine(model);
    Request request;
    for (const auto& layer : layers)
        request.grabs.push_back(GrabSpec::parse(layer + ":grad"));
    request.targetClass = 3;
    const auto result = engine.run(request, {loadTensor("pt2_" + name + "_input.pt")});
    const auto expected = loadExpected("pt2_" + name + "_expected.pt");
    ASSERT_FALSE(layers.empty());
    for (const auto& layer : layers)
        EXPECT_TRUE(
            tensorsCloseRelative(layer + ":grad", result.tensor(layer + ":grad"), expected.at(layer + ":grad"), 1e-5));
    EXPECT_TRUE(tensorsClose("output", result.tensor("output"), expected.at("output"), 1e-5));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GradientOfPyTorch2Model,
    ::testing::Values("vit_b_16", "swin_t", "resnet50", "sdpa_scripted", "sdpa_traced"),
    [](const auto& info) { return info.param; });

TEST(Gradient, RepeatedRunsStayDefined)
{
    // The profiling executor would fuse the graph into a DifferentiableGraph on later runs and
    // return undefined gradients for intermediates; gradient graphs use the simple executor.
    auto model = loadModel("resnet18_scripted.pt");
    Engine engine(model);
    Request request;
    request.grabs = {GrabSpec::parse("layer4:grad")};
    request.targetClass = 3;
    const auto input = loadTensor("resnet18_input.pt");
    const auto expected = loadExpected("resnet18_expected.pt").at("layer4:grad");
    for (int run = 0; run < 3; ++run)
        EXPECT_TRUE(tensorsCloseRelative("layer4:grad run " + std::to_string(run),
            engine.run(request, {input}).tensor("layer4:grad"), expected, 1e-5));
}

TEST(Gradient, NegativeTargetMeansThePredictedClass)
{
    auto model = loadModel("resnet18_scripted.pt");
    Engine engine(model);
    Request request;
    request.grabs = {GrabSpec::parse("layer4:grad")};
    const auto input = loadTensor("resnet18_input.pt");
    request.targetClass = -1;
    const at::Tensor predicted = engine.run(request, {input}).tensor("layer4:grad");
    request.targetClass = loadExpected("resnet18_expected.pt").at("output").sum(0).argmax().item<int64_t>();
    EXPECT_TRUE(tensorsClose("predicted class", predicted, engine.run(request, {input}).tensor("layer4:grad")));
}

TEST(Gradient, NeedsATarget)
{
    auto model = loadModel("resnet18_scripted.pt");
    Engine engine(model);
    Request request;
    request.grabs = {GrabSpec::parse("layer4:grad")};
    const std::string message = errorOf([&] { engine.run(request, {loadTensor("resnet18_input.pt")}); });
    EXPECT_NE(message.find("--target"), std::string::npos) << message;
}

TEST(Gradient, TargetOutOfRange)
{
    auto model = loadModel("resnet18_scripted.pt");
    Engine engine(model);
    Request request;
    request.grabs = {GrabSpec::parse("layer4:grad")};
    request.targetClass = 1000;
    const std::string message = errorOf([&] { engine.run(request, {loadTensor("resnet18_input.pt")}); });
    EXPECT_NE(message.find("target class 1000 is out of range: the output has 1000 classes"), std::string::npos)
        << message;
}

} // namespace
} // namespace torchscope::test
