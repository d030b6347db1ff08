// Editing a module's output before the rest of the network sees it (nethook's edit_output),
// against Python forward hooks that return the edited output.
#include "test_support.h"

namespace torchscope::test {
namespace {

RunResult runWithEdit(const std::string& spec, std::vector<at::Tensor> tensors = {})
{
    auto model = loadModel("resnet18_scripted.pt");
    Engine engine(model);
    Request request;
    request.edits = {EditSpec::parse(spec)};
    return engine.run(request, {loadTensor("resnet18_input.pt")}, tensors);
}

TEST(Edit, ZeroChannels)
{
    const auto expected = loadExpected("resnet18_expected.pt");
    EXPECT_TRUE(
        tensorsClose("zero", runWithEdit("layer2:zero:0,5,7").tensor("output"), expected.at("edit:zero:layer2"), 1e-5));
}

TEST(Edit, ScaleChannels)
{
    const auto expected = loadExpected("resnet18_expected.pt");
    EXPECT_TRUE(tensorsClose(
        "scale", runWithEdit("layer3.0:scale:1-2:2.5").tensor("output"), expected.at("edit:scale:layer3.0"), 1e-5));
}

TEST(Edit, AddTensor)
{
    const auto expected = loadExpected("resnet18_expected.pt");
    EXPECT_TRUE(tensorsClose("add", runWithEdit("layer1:add", {expected.at("edit:add:layer1.add")}).tensor("output"),
        expected.at("edit:add:layer1"), 1e-5));
}

TEST(Edit, ActivationPatchingFromAnotherInput)
{
    // Record layer3 for input B, then run input A with layer3 replaced by it.
    auto model = loadModel("resnet18_scripted.pt");
    Engine engine(model);
    Request record;
    record.grabs = {GrabSpec::parse("layer3")};
    const at::Tensor fromB = engine.run(record, {loadTensor("resnet18_input_b.pt")}).tensor("layer3");
    Request patch;
    patch.edits = {EditSpec::parse("layer3:replace")};
    patch.grabs = {GrabSpec::parse("layer3")};
    const auto result = engine.run(patch, {loadTensor("resnet18_input.pt")}, {fromB});
    const auto expected = loadExpected("resnet18_expected.pt");
    EXPECT_TRUE(tensorsClose("patched", result.tensor("output"), expected.at("patch:layer3"), 1e-5));
    EXPECT_TRUE(result.tensor("layer3").equal(fromB)) << "a grab of an edited module records what the net saw";
}

TEST(Edit, PatchingTheLastLayerGivesTheOtherInputsOutput)
{
    auto model = loadModel("resnet18_scripted.pt");
    Engine engine(model);
    Request record;
    record.grabs = {GrabSpec::parse("avgpool")};
    const at::Tensor fromB = engine.run(record, {loadTensor("resnet18_input_b.pt")}).tensor("avgpool");
    Request patch;
    patch.edits = {EditSpec::parse("avgpool:replace")};
    const auto patched = engine.run(patch, {loadTensor("resnet18_input.pt")}, {fromB}).tensor("output");
    EXPECT_TRUE(tensorsClose("patched", patched, loadExpected("resnet18_expected.pt").at("output_b"), 1e-5));
}

TEST(Edit, ChannelOutOfRangeSaysHowManyThereAre)
{
    const std::string message = errorOf([] { runWithEdit("layer2:zero:0,500"); });
    EXPECT_NE(message.find("channel 500 is out of range: the output has 128 channels"), std::string::npos) << message;
}

TEST(Edit, ReplacementOfTheWrongShape)
{
    const std::string message = errorOf([] { runWithEdit("layer3:replace", {at::zeros({1, 2, 3})}); });
    EXPECT_NE(message.find("the replacement has shape [1, 2, 3] but the output it replaces has shape [2, 256, 14, 14]"),
        std::string::npos)
        << message;
}

TEST(Edit, MissingTensor)
{
    const std::string message = errorOf([] { runWithEdit("layer3:add"); });
    EXPECT_NE(message.find("need 1 tensor(s)"), std::string::npos) << message;
}

} // namespace
} // namespace torchscope::test
