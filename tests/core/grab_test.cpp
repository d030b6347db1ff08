// Every module's output (all calls) and first input, grabbed by graph surgery, against Python
// forward hooks and forward pre-hooks on the same weights.
#include "test_support.h"

#include "common/strings.h"
#include "graph/instrumenter.h"

namespace torchscope::test {
namespace {

struct GrabCase {
    const char* model;
    const char* input;
    const char* expected;
};

void PrintTo(const GrabCase& c, std::ostream* os)
{
    *os << c.model;
}

class GrabEveryModule : public ::testing::TestWithParam<GrabCase> { };

bool isHookKey(const std::string& key)
{
    // Module outputs (PATH, PATH#k) and first inputs (PATH:in0, PATH:in0#k) of the fixtures.
    if (key == "output_b")
        return false;
    if (key == "output" || key.find(':') == std::string::npos)
        return true;
    return key.find(":in0") != std::string::npos;
}

TEST_P(GrabEveryModule, MatchesPythonHooks)
{
    const GrabCase& c = GetParam();
    auto model = loadModel(c.model);
    Engine engine(model);
    Request request;
    request.grabs = {GrabSpec::parse("*"), GrabSpec::parse("*:in0")};
    const RunResult result = engine.run(request, forwardInputsFromBatch(*model, loadTensor(c.input)));

    size_t compared = 0;
    for (const auto& [key, expected] : loadExpected(c.expected)) {
        if (!isHookKey(key))
            continue;
        const auto* value = result.find(key);
        ASSERT_NE(value, nullptr) << key << " was not grabbed";
        EXPECT_TRUE(tensorsClose(key, value->toTensor(), expected, 1e-5));
        ++compared;
    }
    size_t tensors = 0;
    for (const auto& [key, value] : result.values)
        tensors += value.isTensor() ? 1 : 0;
    // Nothing grabbed that Python's hooks did not see, nothing they saw missing.
    EXPECT_EQ(compared, tensors);
    EXPECT_GT(compared, 3u);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GrabEveryModule,
    ::testing::Values(GrabCase{"resnet18_scripted.pt", "resnet18_input.pt", "resnet18_expected.pt"},
        GrabCase{"resnet18_traced.pt", "resnet18_input.pt", "resnet18_expected.pt"},
        GrabCase{"mobilenet_v3_small_scripted.pt", "mobilenet_input.pt", "mobilenet_expected.pt"},
        GrabCase{"relu_twice.pt", "small_input.pt", "relu_twice_expected.pt"},
        GrabCase{"branchy.pt", "small_input.pt", "branchy_expected.pt"},
        GrabCase{"inplace.pt", "small_input.pt", "inplace_expected.pt"},
        // Saved by the environment's PyTorch 2.x: transformers that LibTorch 1.13 could not open.
        GrabCase{"pt2_vit_b_16.pt", "pt2_vit_b_16_input.pt", "pt2_vit_b_16_expected.pt"},
        GrabCase{"pt2_swin_t.pt", "pt2_swin_t_input.pt", "pt2_swin_t_expected.pt"},
        GrabCase{"pt2_resnet50.pt", "pt2_resnet50_input.pt", "pt2_resnet50_expected.pt"},
        GrabCase{"pt2_sdpa_scripted.pt", "pt2_sdpa_scripted_input.pt", "pt2_sdpa_scripted_expected.pt"},
        GrabCase{"pt2_sdpa_traced.pt", "pt2_sdpa_traced_input.pt", "pt2_sdpa_traced_expected.pt"}),
    [](const auto& info) {
        std::string name = info.param.model;
        name = name.substr(0, name.find('.'));
        return name;
    });

TEST(Grab, ModuleCalledTwiceGivesCallZeroAndOne)
{
    auto model = loadModel("relu_twice.pt");
    Engine engine(model);
    Request request;
    request.grabs = {GrabSpec::parse("relu")};
    const auto result = engine.run(request, {loadTensor("small_input.pt")});
    const auto expected = loadExpected("relu_twice_expected.pt");
    EXPECT_TRUE(tensorsClose("relu", result.tensor("relu"), expected.at("relu")));
    EXPECT_TRUE(tensorsClose("relu#1", result.tensor("relu#1"), expected.at("relu#1")));
    EXPECT_EQ(result.find("relu#2"), nullptr);
    // The two calls differ: the last call must not silently win (hybrid_learning's defect).
    EXPECT_FALSE(result.tensor("relu").sizes() == result.tensor("relu#1").sizes()
        && result.tensor("relu").equal(result.tensor("relu#1")));
}

TEST(Grab, OutputIsKeptBeforeALaterInPlaceOp)
{
    // conv's output is changed by y.add_(1) and ReLU(inplace=True) right after the call.
    auto model = loadModel("inplace.pt");
    Engine engine(model);
    Request request;
    request.grabs = {GrabSpec::parse("conv"), GrabSpec::parse("act:in0")};
    const auto result = engine.run(request, {loadTensor("small_input.pt")});
    const auto expected = loadExpected("inplace_expected.pt");
    EXPECT_TRUE(tensorsClose("conv", result.tensor("conv"), expected.at("conv")));
    EXPECT_TRUE(tensorsClose("act:in0", result.tensor("act:in0"), expected.at("act:in0")));
    EXPECT_LT(result.tensor("act:in0").min().item<float>(), 0.0f) << "input recorded after the in-place ReLU";
}

TEST(Grab, BranchNotTakenIsReportedNotInvented)
{
    auto model = loadModel("branchy.pt");
    Engine engine(model);
    Request request;
    request.grabs = {GrabSpec::parse("a"), GrabSpec::parse("b"), GrabSpec::parse("c")};
    const auto result = engine.run(request, {loadTensor("small_input.pt")});
    EXPECT_NE(result.find("a"), nullptr);
    EXPECT_EQ(result.find("b"), nullptr);
    EXPECT_NE(result.find("c#2"), nullptr) << "a module in a loop gives one value per iteration";
    ASSERT_EQ(result.warnings.size(), 1u);
    EXPECT_NE(result.warnings[0].find("'b' was not reached"), std::string::npos) << result.warnings[0];
}

TEST(Grab, SeveralInputsModel)
{
    auto model = loadModel("two_inputs.pt");
    ASSERT_EQ(model->forwardArguments().size(), 2u);
    Engine engine(model);
    Request request;
    request.grabs = {GrabSpec::parse("left"), GrabSpec::parse("right"), GrabSpec::parse("right:in0")};
    const auto b = loadTensor("two_inputs_b.pt");
    const auto result = engine.run(request, {loadTensor("two_inputs_a.pt"), b});
    const auto expected = loadExpected("two_inputs_expected.pt");
    for (const char* key : {"output", "left", "right"})
        EXPECT_TRUE(tensorsClose(key, result.tensor(key), expected.at(key), 1e-6));
    EXPECT_TRUE(tensorsClose("right:in0", result.tensor("right:in0"), b));
}

TEST(Grab, TypeAndGlobSelectors)
{
    auto model = loadModel("resnet18_scripted.pt");
    Engine engine(model);
    Request request;
    request.grabs = {GrabSpec::parse("type:Conv2d")};
    const auto resolved = engine.resolve(request);
    EXPECT_EQ(resolved.captures.size(), 20u); // ResNet-18: stem + 16 block convs + 3 downsample convs
    // layer3.*: every module under layer3 (fnmatch's * crosses dots), in named_modules() order, and
    // nothing else: ResNet-18's two blocks with their convolutions, norms, ReLUs and the downsample.
    request.grabs = {GrabSpec::parse("layer3.*")};
    std::vector<std::string> got;
    for (const auto& slot : engine.resolve(request).captures)
        got.push_back(slot.path);
    const std::vector<std::string> want{"layer3.0", "layer3.0.conv1", "layer3.0.bn1", "layer3.0.relu", "layer3.0.conv2",
        "layer3.0.bn2", "layer3.0.downsample", "layer3.0.downsample.0", "layer3.0.downsample.1", "layer3.1",
        "layer3.1.conv1", "layer3.1.bn1", "layer3.1.relu", "layer3.1.conv2", "layer3.1.bn2"};
    EXPECT_EQ(got, want);
}

size_t countClones(const Model& model, const std::vector<std::string>& grabs)
{
    ResolvedRequest request;
    for (const auto& g : grabs) {
        const auto spec = GrabSpec::parse(g);
        request.captures.push_back({g, spec.selector, spec.kind, spec.inputIndex});
    }
    const std::string graph = instrument(model.module(), request)->function->graph()->toString();
    size_t count = 0;
    for (size_t at = graph.find("aten::clone"); at != std::string::npos; at = graph.find("aten::clone", at + 1))
        ++count;
    return count;
}

TEST(Grab, CopiesOnlyWhatALaterInPlaceOpCouldChange)
{
    auto model = loadModel("resnet18_scripted.pt");
    // Block outputs feed the next block, which only reads them: no copy needed.
    EXPECT_EQ(countClones(*model, {"layer1", "layer2", "layer3", "layer4", "layer2:in0"}), 0u);
    // bn1 is followed by ReLU(inplace=True); the ReLU's own input is written by it.
    EXPECT_EQ(countClones(*model, {"bn1"}), 1u);
    EXPECT_EQ(countClones(*model, {"relu:in0"}), 1u);
    // In the in-place fixture, conv's output is changed by y.add_(1).
    EXPECT_EQ(countClones(*loadModel("inplace.pt"), {"conv"}), 1u);
}

TEST(Grab, LoadedModuleIsNeverModified)
{
    auto model = loadModel("resnet18_scripted.pt");
    const auto before = model->module().get_method("forward").graph()->toString();
    Engine engine(model);
    Request request;
    request.grabs = {GrabSpec::parse("*")};
    request.truncateAt = "layer2";
    engine.run(request, {loadTensor("resnet18_input.pt")});
    EXPECT_EQ(model->module().get_method("forward").graph()->toString(), before);
    // And the plain model still gives the full output.
    const auto plain = model->module().forward({loadTensor("resnet18_input.pt")}).toTensor();
    EXPECT_TRUE(tensorsClose("output", plain, loadExpected("resnet18_expected.pt").at("output"), 1e-5));
}

TEST(Grab, InstrumentedGraphsAreCachedPerRequest)
{
    auto model = loadModel("relu_twice.pt");
    Engine engine(model);
    Request request;
    request.grabs = {GrabSpec::parse("relu")};
    const auto input = loadTensor("small_input.pt");
    engine.run(request, {input});
    engine.run(request, {input});
    EXPECT_EQ(engine.cachedGraphs(), 1u);
    request.grabs.push_back(GrabSpec::parse("conv1"));
    engine.run(request, {input});
    EXPECT_EQ(engine.cachedGraphs(), 2u);
}

TEST(Grab, UnknownPathNamesClosestPaths)
{
    auto model = loadModel("resnet18_scripted.pt");
    Engine engine(model);
    Request request;
    request.grabs = {GrabSpec::parse("layer1.0.conv3")};
    const std::string message = errorOf([&] { engine.run(request, {loadTensor("resnet18_input.pt")}); });
    EXPECT_NE(message.find("no module 'layer1.0.conv3'"), std::string::npos) << message;
    EXPECT_NE(message.find("layer1.0.conv1"), std::string::npos) << message;
}

TEST(Grab, MissingInputIndexIsExplained)
{
    auto model = loadModel("resnet18_scripted.pt");
    Engine engine(model);
    Request request;
    request.grabs = {GrabSpec::parse("layer1:in1")};
    const std::string message = errorOf([&] { engine.run(request, {loadTensor("resnet18_input.pt")}); });
    EXPECT_NE(message.find("takes 1 input(s), so in1 does not exist"), std::string::npos) << message;
}

} // namespace
} // namespace torchscope::test
