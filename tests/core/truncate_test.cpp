// Truncation (TruncatedModule / ModelStump): the output of the truncation point, and no work
// after it left in the graph.
#include "test_support.h"

#include "graph/instrumenter.h"

namespace torchscope::test {
namespace {

class TruncateResNet : public ::testing::TestWithParam<const char*> { };

TEST_P(TruncateResNet, ReturnsTheLayerOutput)
{
    auto model = loadModel("resnet18_scripted.pt");
    Engine engine(model);
    Request request;
    request.truncateAt = GetParam();
    const auto result = engine.run(request, {loadTensor("resnet18_input.pt")});
    EXPECT_TRUE(
        tensorsClose(GetParam(), result.tensor("output"), loadExpected("resnet18_expected.pt").at(GetParam()), 1e-5));
}

INSTANTIATE_TEST_SUITE_P(Layers, TruncateResNet,
    ::testing::Values("conv1", "layer1", "layer2", "layer3", "layer4", "layer2.1.conv1"), [](const auto& info) {
        std::string name = info.param;
        std::replace(name.begin(), name.end(), '.', '_');
        return name;
    });

std::string instrumentedGraph(const Model& model, const std::string& truncateAt)
{
    ResolvedRequest request;
    request.truncateAt = truncateAt;
    return instrument(model.module(), request)->function->graph()->toString();
}

TEST(Truncate, NothingAfterTheTruncationPointIsLeft)
{
    auto model = loadModel("resnet18_scripted.pt");
    const std::string graph = instrumentedGraph(*model, "layer2");
    EXPECT_NE(graph.find("name=\"layer2\""), std::string::npos);
    for (const char* later : {"name=\"layer3\"", "name=\"layer4\"", "name=\"fc\"", "aten::flatten"})
        EXPECT_EQ(graph.find(later), std::string::npos) << later << " is still in\n" << graph;
}

TEST(Truncate, InPlaceOpsAndAssertionsAfterTheCutAreRemoved)
{
    // Plain dead-code elimination keeps these (side effects); the cut must drop them.
    auto model = loadModel("inplace.pt");
    const std::string graph = instrumentedGraph(*model, "conv");
    for (const char* later : {"aten::add_", "name=\"act\"", "name=\"head\"", "RaiseException", "aten::_assert"})
        EXPECT_EQ(graph.find(later), std::string::npos) << later << " is still in\n" << graph;
    Engine engine(model);
    Request request;
    request.truncateAt = "conv";
    const auto result = engine.run(request, {loadTensor("small_input.pt")});
    EXPECT_TRUE(tensorsClose("conv", result.tensor("output"), loadExpected("inplace_expected.pt").at("conv")));
}

TEST(Truncate, GrabsBeforeThePointAreKeptLaterOnesReported)
{
    auto model = loadModel("resnet18_scripted.pt");
    Engine engine(model);
    Request request;
    request.truncateAt = "layer2";
    request.grabs = {GrabSpec::parse("layer1"), GrabSpec::parse("layer4")};
    const auto result = engine.run(request, {loadTensor("resnet18_input.pt")});
    EXPECT_TRUE(
        tensorsClose("layer1", result.tensor("layer1"), loadExpected("resnet18_expected.pt").at("layer1"), 1e-5));
    EXPECT_EQ(result.find("layer4"), nullptr);
    ASSERT_EQ(result.warnings.size(), 1u);
    EXPECT_NE(result.warnings[0].find("'layer4' runs only after the truncation point 'layer2'"), std::string::npos);
}

TEST(Truncate, InsideABranchIsRefusedAndSaysWhere)
{
    auto model = loadModel("branchy.pt");
    Engine engine(model);
    Request request;
    request.truncateAt = "a";
    const std::string message = errorOf([&] { engine.run(request, {loadTensor("small_input.pt")}); });
    EXPECT_NE(message.find("cannot truncate at 'a'"), std::string::npos) << message;
    EXPECT_NE(message.find("inside an if-branch"), std::string::npos) << message;
}

TEST(Truncate, InsideALoopIsRefusedAndSaysWhere)
{
    auto model = loadModel("branchy.pt");
    Engine engine(model);
    Request request;
    request.truncateAt = "c";
    const std::string message = errorOf([&] { engine.run(request, {loadTensor("small_input.pt")}); });
    EXPECT_NE(message.find("inside a loop"), std::string::npos) << message;
}

TEST(Truncate, UnknownPointNamesClosestPaths)
{
    auto model = loadModel("resnet18_scripted.pt");
    Engine engine(model);
    Request request;
    request.truncateAt = "layer5";
    const std::string message = errorOf([&] { engine.run(request, {loadTensor("resnet18_input.pt")}); });
    EXPECT_NE(message.find("no module 'layer5'; closest paths: layer1"), std::string::npos) << message;
}

} // namespace
} // namespace torchscope::test
