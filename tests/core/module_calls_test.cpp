// Which modules a model's forward calls, and every call form TorchScript produces, against the
// modules whose Python forward hooks fire on the same model.
#include "test_support.h"

#include "graph/selector.h"

#include <set>

namespace torchscope::test {
namespace {

std::set<std::string> calledModules(const Model& model)
{
    std::set<std::string> called;
    for (const auto& m : model.modules())
        if (!m.path.empty() && m.called)
            called.insert(m.path);
    return called;
}

std::set<std::string> asSet(const std::vector<std::string>& names)
{
    return {names.begin(), names.end()};
}

TEST(NeverCalled, ModulesMatchThoseWhoseHooksFire)
{
    auto model = loadModel("never_called.pt");
    EXPECT_EQ(calledModules(*model), asSet(loadNames("never_called_called.json")));
    EXPECT_NE(model->find("blocks")->notCalledReason.find("container"), std::string::npos);
    EXPECT_NE(model->find("proj")->notCalledReason.find("weights are used directly"), std::string::npos);
    EXPECT_NE(model->find("unused")->notCalledReason.find("never uses it"), std::string::npos);
    EXPECT_TRUE(model->find("act")->called); // called from a helper method of the root
}

TEST(NeverCalled, GlobsSkipThemWithANoteAndTheRestMatchesHooks)
{
    auto model = loadModel("never_called.pt");
    Engine engine(model);
    Request request;
    request.grabs = {GrabSpec::parse("*")};
    const RunResult result = engine.run(request, {loadTensor("never_called_input.pt")});
    size_t compared = 0;
    for (const auto& [key, expected] : loadExpected("never_called_expected.pt")) {
        if (key.find(':') != std::string::npos)
            continue;
        EXPECT_TRUE(tensorsClose(key, result.tensor(key), expected, 1e-6));
        ++compared;
    }
    EXPECT_EQ(compared, result.values.size()); // the output and the five modules that run
    bool noted = false;
    for (const auto& w : result.warnings)
        noted = noted || (w.find("skips 3 module(s)") != std::string::npos && w.find("unused") != std::string::npos);
    EXPECT_TRUE(noted);
}

TEST(NeverCalled, TypeSelectionSkipsThemToo)
{
    auto model = loadModel("never_called.pt");
    std::vector<std::string> notes;
    EXPECT_EQ(resolveSelector(*model, "type:Linear", &notes), std::vector<std::string>{"head"});
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_NE(notes[0].find("proj, unused"), std::string::npos);
}

TEST(NeverCalled, AGrabByPathIsRefusedWithTheReason)
{
    auto model = loadModel("never_called.pt");
    Engine engine(model);
    Request request;
    request.grabs = {GrabSpec::parse("unused")};
    const std::string error = errorOf([&] { engine.run(request, {loadTensor("never_called_input.pt")}); });
    EXPECT_NE(error.find("module 'unused' never runs in this model"), std::string::npos) << error;
    EXPECT_NE(error.find("left-over or unused"), std::string::npos) << error;
    request.grabs = {};
    request.truncateAt = "proj";
    EXPECT_NE(errorOf([&] { engine.prepare(request); }).find("weights are used directly"), std::string::npos);
}

TEST(NeverCalled, DryRunFillsTheShapesOfTheRest)
{
    auto model = loadModel("never_called.pt");
    dryRun(*model, {loadTensor("never_called_input.pt")});
    EXPECT_EQ(model->find("head")->outputShapes, (std::vector<std::vector<int64_t>>{{2, 3}}));
    EXPECT_TRUE(model->find("unused")->outputShapes.empty());
}

TEST(DenseNet, OverloadedForwardCallsAreFollowed)
{
    // _DenseBlock calls its layers with prim::CallMethod[name="forward__0"].
    auto model = loadModel("densenet121_scripted.pt");
    EXPECT_EQ(calledModules(*model), asSet(loadNames("densenet_called.json")));
    EXPECT_EQ(model->find("features.denseblock1.denselayer2")->callSites.size(), 1u);
}

TEST(DenseNet, BlocksAndLayersInsideMatchHooks)
{
    auto model = loadModel("densenet121_scripted.pt");
    Engine engine(model);
    Request request;
    const auto expected = loadExpected("densenet_expected.pt");
    for (const auto& [key, value] : expected)
        if (key != "output")
            request.grabs.push_back(GrabSpec::parse(key));
    const RunResult result = engine.run(request, {loadTensor("densenet_input.pt")});
    for (const auto& [key, value] : expected)
        EXPECT_TRUE(tensorsClose(key, result.tensor(key), value, scaledTolerance(value, 1e-5)));
}

TEST(Frozen, IsNamedWithWhatStillWorks)
{
    auto model = loadModel("frozen_relu_twice.pt");
    EXPECT_EQ(model->modules().size(), 1u);
    EXPECT_NE(model->frozenNote().find("torch.jit.freeze"), std::string::npos);
    Engine engine(model);
    Request request;
    request.grabs = {GrabSpec::parse("conv1")};
    const std::string error = errorOf([&] { engine.prepare(request); });
    EXPECT_NE(error.find("no module 'conv1'"), std::string::npos) << error;
    EXPECT_NE(error.find("frozen with torch.jit.freeze"), std::string::npos) << error;
    // Running it still works and gives the eager model's output.
    const RunResult result = engine.run({}, {loadTensor("small_input.pt")});
    EXPECT_TRUE(
        tensorsClose("output", result.tensor("output"), loadExpected("relu_twice_expected.pt").at("output"), 1e-5));
    EXPECT_TRUE(loadModel("relu_twice.pt")->frozenNote().empty());
}

TEST(NewerPyTorch, AHigherFileFormatVersionIsNamed)
{
    const std::string error = errorOf([] { loadModel("newer_version.pt"); });
    EXPECT_NE(error.find("file format version 99"), std::string::npos) << error;
    EXPECT_NE(error.find("reads versions up to 10"), std::string::npos) << error;
    EXPECT_NE(error.find("CMAKE_PREFIX_PATH"), std::string::npos) << error;
}

TEST(NewerPyTorch, AnUnknownOperatorPointsAtTheVersion)
{
    const std::string error = errorOf([] { loadModel("newer_op.pt"); });
    EXPECT_NE(error.find("aten::relu_from_the_future"), std::string::npos) << error;
    EXPECT_NE(error.find("newer PyTorch"), std::string::npos) << error;
    EXPECT_NE(error.find("file format version"), std::string::npos) << error;
}

TEST(Truncation, AGradientOfATruncatedRunIsRefusedBeforeRunning)
{
    auto model = loadModel("resnet18_scripted.pt");
    Engine engine(model);
    Request request;
    request.grabs = {GrabSpec::parse("layer1:grad")};
    request.truncateAt = "layer2";
    request.targetClass = 3;
    const std::string error = errorOf([&] { engine.prepare(request); });
    EXPECT_NE(error.find("truncated at 'layer2'"), std::string::npos) << error;
    // The engine keeps working for the next request.
    request.grabs = {GrabSpec::parse("layer1")};
    EXPECT_EQ(engine.run(request, {loadTensor("resnet18_input.pt")}).tensor("layer1").size(1), 64);
}

} // namespace
} // namespace torchscope::test
