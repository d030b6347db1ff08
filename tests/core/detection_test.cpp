// Mask R-CNN (torchvision, scripted): List[Tensor] input, custom torchvision ops, dict outputs.
#include "test_support.h"

#include "model/operator_libraries.h"

namespace torchscope::test {
namespace {

TEST(Detection, BackboneLayersHaveTheSeedsShapesAndPythonsValues)
{
    auto model = loadModel("maskrcnn_scripted.pt");
    ASSERT_FALSE(model->forwardArguments().empty());
    EXPECT_EQ(model->forwardArguments()[0].type, "List[Tensor]");
    Engine engine(model);
    Request request;
    request.grabs = {GrabSpec::parse("backbone.body.layer3"), GrabSpec::parse("backbone.body.layer4")};
    const auto result = engine.run(request, forwardInputsFromBatch(*model, loadTensor("maskrcnn_input.pt")));
    EXPECT_EQ(result.tensor("backbone.body.layer3").sizes().vec(), (std::vector<int64_t>{1, 1024, 50, 50}));
    EXPECT_EQ(result.tensor("backbone.body.layer4").sizes().vec(), (std::vector<int64_t>{1, 2048, 25, 25}));
    const auto expected = loadExpected("maskrcnn_expected.pt");
    for (const char* key : {"backbone.body.layer3", "backbone.body.layer4"})
        EXPECT_TRUE(tensorsClose(key, result.tensor(key), expected.at(key), relativeTolerance(expected.at(key), 1e-5)));
    // The detections come back as the model's own (losses, detections) tuple, and the model's
    // own warnings.warn() comes back with the result instead of going to stderr.
    EXPECT_TRUE(result.find("output")->isTuple());
    ASSERT_FALSE(result.warnings.empty());
    EXPECT_NE(result.warnings[0].find("the model warned: RCNN always returns a (Losses, Detections) tuple"),
        std::string::npos)
        << result.warnings[0];
}

TEST(Detection, TruncatedAtTheBackboneSkipsTheHeads)
{
    auto model = loadModel("maskrcnn_scripted.pt");
    Engine engine(model);
    Request request;
    request.truncateAt = "backbone.body.layer3";
    const auto result = engine.run(request, forwardInputsFromBatch(*model, loadTensor("maskrcnn_input.pt")));
    const at::Tensor expected = loadExpected("maskrcnn_expected.pt").at("backbone.body.layer3");
    EXPECT_TRUE(tensorsClose("layer3", result.tensor("output"), expected, relativeTolerance(expected, 1e-5)));
}

TEST(Detection, GradientOfADictOutputIsRefused)
{
    auto model = loadModel("maskrcnn_scripted.pt");
    Engine engine(model);
    Request request;
    request.grabs = {GrabSpec::parse("backbone:grad")};
    request.targetClass = 1;
    const std::string message
        = errorOf([&] { engine.run(request, forwardInputsFromBatch(*model, loadTensor("maskrcnn_input.pt"))); });
    EXPECT_NE(message.find("a gradient needs a tensor output, but module 'backbone' returns Dict[str, Tensor]"),
        std::string::npos)
        << message;
}

TEST(Detection, WithoutTorchvisionOpsTheMessageNamesTheLibrary)
{
    LoadOptions options;
    options.loadDefaultOperatorLibraries = false;
    const LibTorchLeaksIgnored importFailureLeaks; // LibTorch leaks the half-imported module
    const std::string message = errorOf([&] { Model::load(fixture("maskrcnn_scripted.pt"), options); });
    EXPECT_NE(message.find("torchvision::"), std::string::npos) << message;
    EXPECT_NE(message.find("torchvision's C++ operator library"), std::string::npos) << message;
    EXPECT_NE(message.find("--ops-library"), std::string::npos) << message;
}

TEST(Detection, TorchvisionOpsBesideTheLinkedLibTorchAreFound)
{
    // The wheel's torchvision, in the site-packages whose torch/lib this process runs on.
    const auto found = defaultOperatorLibraries();
    ASSERT_FALSE(found.empty()) << "no torchvision/_C*.so beside the linked LibTorch";
    for (const auto& path : found)
        EXPECT_NE(path.find("site-packages/torchvision/_C"), std::string::npos) << path;
    LoadOptions options;
    for (const auto& path : found)
        options.operatorLibraries.push_back(path);
    options.loadDefaultOperatorLibraries = false;
    EXPECT_NO_THROW(Model::load(fixture("fasterrcnn_scripted.pt"), options));
}

TEST(OperatorLibraries, AdviceForAnUnknownNamespace)
{
    const std::string advice = missingOperatorAdvice("Unknown builtin op: mylab::fancy_pool.\nHere are some...");
    EXPECT_NE(advice.find("mylab::fancy_pool"), std::string::npos) << advice;
    EXPECT_NE(advice.find("'mylab' operators"), std::string::npos) << advice;
    EXPECT_EQ(missingOperatorAdvice("some other error"), "");
}

TEST(OperatorLibraries, MissingLibraryFileIsReported)
{
    const std::string message = errorOf([] { loadOperatorLibrary("/nonexistent/libops.so"); });
    EXPECT_NE(message.find("'/nonexistent/libops.so' does not exist"), std::string::npos) << message;
}

} // namespace
} // namespace torchscope::test
