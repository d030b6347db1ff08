// Gradients of the target class score (summed over the batch) w.r.t. module outputs, against
// torch.autograd.grad in Python on the same weights.
#include "test_support.h"

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
