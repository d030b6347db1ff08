// Loading, the module tree (against Python's named_modules()), and messages for wrong files.
#include "test_support.h"

#include "model/model_setup.h"
#include "preprocess/preprocessing.h"
#include "record/batch_run.h"
#include "record/labelled_samples.h"
#include "record/recorder.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/version.h>

#include <nlohmann/json.hpp>
#include <torch/cuda.h>

#include <fstream>

namespace torchscope::test {
namespace {

void expectTreeMatchesPython(const std::string& modelFile, const std::string& tableFile)
{
    auto model = loadModel(modelFile);
    std::ifstream in(fixture(tableFile));
    const auto table = nlohmann::json::parse(in);
    ASSERT_EQ(model->modules().size(), table.size());
    for (size_t i = 0; i < table.size(); ++i) {
        const auto& info = model->modules()[i];
        SCOPED_TRACE(info.path);
        EXPECT_EQ(info.path, table[i]["path"].get<std::string>());
        EXPECT_EQ(info.shortType, table[i]["type"].get<std::string>());
        EXPECT_EQ(info.ownParameters, table[i]["own_parameters"].get<int64_t>());
        EXPECT_EQ(info.totalParameters, table[i]["total_parameters"].get<int64_t>());
    }
}

TEST(ModuleTree, ResNetMatchesNamedModules)
{
    expectTreeMatchesPython("resnet18_scripted.pt", "resnet18_modules.json");
}

TEST(ModuleTree, TracedResNetMatchesNamedModules)
{
    expectTreeMatchesPython("resnet18_traced.pt", "resnet18_modules.json");
}

TEST(ModuleTree, MaskRCNNMatchesNamedModules)
{
    expectTreeMatchesPython("maskrcnn_scripted.pt", "maskrcnn_modules.json");
}

TEST(ModuleTree, TypesParentsAndChildren)
{
    auto model = loadModel("resnet18_scripted.pt");
    const auto* conv = model->find("layer1.0.conv1");
    ASSERT_NE(conv, nullptr);
    EXPECT_EQ(conv->qualifiedType, "torch.nn.modules.conv.Conv2d");
    EXPECT_EQ(conv->name, "conv1");
    EXPECT_EQ(model->modules()[static_cast<size_t>(conv->parent)].path, "layer1.0");
    EXPECT_EQ(model->find("")->shortType, "ResNet");
    EXPECT_EQ(model->find("")->children.size(), 10u);
    EXPECT_EQ(model->find("layer1.0")->shortType, "BasicBlock");
}

TEST(ModuleTree, CallSitesCountAndPlace)
{
    auto model = loadModel("resnet18_scripted.pt");
    const auto& relu = model->find("layer1.0.relu")->callSites;
    ASSERT_EQ(relu.size(), 2u);
    EXPECT_EQ(relu[0].method, "forward");
    EXPECT_GT(relu[0].line, 0);
    // ResNet.forward calls the helper method _forward_impl, which calls the layers.
    ASSERT_EQ(model->find("layer1")->callSites.size(), 1u);
    EXPECT_EQ(model->find("layer1")->callSites[0].method, "_forward_impl");

    auto branchy = loadModel("branchy.pt");
    EXPECT_EQ(branchy->find("a")->callSites.at(0).context, "inside an if-branch");
    EXPECT_EQ(branchy->find("c")->callSites.at(0).context, "inside a loop");
    EXPECT_EQ(branchy->find("stem")->callSites.at(0).context, "");
}

TEST(ModuleTree, TracedModelNamesLaterCallsForward1)
{
    auto model = loadModel("resnet18_traced.pt");
    const auto& relu = model->find("layer1.0.relu")->callSites;
    ASSERT_EQ(relu.size(), 2u);
}

TEST(ModuleTree, DryRunFillsOutputShapes)
{
    auto model = loadModel("resnet18_scripted.pt");
    dryRun(*model, {loadTensor("resnet18_input.pt")});
    EXPECT_EQ(model->find("layer1")->outputShapes, (std::vector<std::vector<int64_t>>{{2, 64, 56, 56}}));
    EXPECT_EQ(model->find("layer1.0.relu")->outputShapes.size(), 2u);
    EXPECT_EQ(model->find("fc")->outputShapes, (std::vector<std::vector<int64_t>>{{2, 1000}}));
}

TEST(ForwardSchema, TensorListAndDefaults)
{
    EXPECT_EQ(loadModel("resnet18_scripted.pt")->forwardSignature(), "forward(x: Tensor)");
    EXPECT_EQ(loadModel("two_inputs.pt")->forwardSignature(), "forward(a: Tensor, b: Tensor)");
    const auto model = loadModel("maskrcnn_scripted.pt"); // a reference into it must not outlive it
    const auto& args = model->forwardArguments();
    ASSERT_EQ(args.size(), 2u);
    EXPECT_EQ(args[0].type, "List[Tensor]");
    EXPECT_TRUE(args[1].hasDefault);
}

TEST(ModelSetup, ReadFromTheArchivesExtraFile)
{
    auto model = loadModel("relu_twice.pt");
    const auto stored = storedSetup(*model);
    ASSERT_TRUE(stored.has_value());
    const ModelSetup& card = *stored;
    EXPECT_EQ(card.labels, (std::vector<std::string>{"zero", "one", "two", "three"}));
    EXPECT_EQ(card.preprocessing.resize, 10);
    EXPECT_EQ(card.preprocessing.cropWidth, 8);
    EXPECT_FALSE(storedSetup(*loadModel("branchy.pt")).has_value());
}

struct BadFile {
    const char* file;
    const char* says;
};

void PrintTo(const BadFile& c, std::ostream* os)
{
    *os << c.file;
}

class BadModelFile : public ::testing::TestWithParam<BadFile> { };

TEST_P(BadModelFile, SaysWhatTheFileIs)
{
    const std::string message = errorOf([] { loadModel(GetParam().file); });
    EXPECT_NE(message.find(GetParam().says), std::string::npos) << message;
    EXPECT_NE(message.find(GetParam().file), std::string::npos) << "the message names the file: " << message;
}

INSTANTIATE_TEST_SUITE_P(Files, BadModelFile,
    ::testing::Values(BadFile{"bad_empty.pt", "empty file (0 bytes)"}, BadFile{"bad_lfs_pointer.pt", "Git LFS pointer"},
        BadFile{"bad_text.pt", "text file (it begins \"this is not a model\")"},
        BadFile{"bad_state_dict.pt", "state_dict (a dictionary of weights) saved with torch.save"},
        BadFile{"bad_pickled_module.pt", "whole nn.Module pickled with torch.save"},
        BadFile{"bad_truncated.pt", "truncated or damaged"}, BadFile{"images/rgb.png", "PNG image"},
        BadFile{"no_such_model.pt", "no such file"}, BadFile{"images", "folder"}),
    [](const auto& info) {
        std::string name = info.param.file;
        for (auto& c : name)
            c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
        return name;
    });

TEST(Device, CudaWithoutAGpuIsExplained)
{
    if (torch::cuda::is_available())
        GTEST_SKIP() << "this machine has CUDA";
    const std::string message = errorOf([] { resolveDevice("cuda"); });
    // The wheel's LibTorch is built with CUDA: the message says the GPU is missing, not CUDA, and
    // names the LibTorch; a CPU-only LibTorch of the user's own is named as such.
    const bool cudaBuild = c10::impl::hasDeviceGuardImpl(c10::DeviceType::CUDA);
    EXPECT_NE(message.find(cudaBuild ? "no CUDA GPU is visible" : "is built for the CPU only"), std::string::npos)
        << message;
    EXPECT_NE(message.find("LibTorch " TORCH_VERSION), std::string::npos) << message;
    EXPECT_EQ(resolveDevice("auto"), "cpu");
    EXPECT_NE(errorOf([] { resolveDevice("tpu"); }).find("unknown device 'tpu'"), std::string::npos);
}

TEST(Device, RunsOnCudaWhenPresent)
{
    if (!torch::cuda::is_available())
        GTEST_SKIP() << "no CUDA device here";
    // TF32 would round convolutions to 10-bit mantissas (1e-3 relative): compare true float32.
    at::globalContext().setAllowTF32CuDNN(false);
    at::globalContext().setAllowTF32CuBLAS(false);
    LoadOptions options;
    options.device = "cuda";
    auto model = Model::load(fixture("resnet18_scripted.pt"), options);
    Engine engine(model);
    Request request;
    request.grabs = {GrabSpec::parse("layer3"), GrabSpec::parse("layer3:grad")};
    request.targetClass = 3;
    const auto result = engine.run(request, {loadTensor("resnet18_input.pt")});
    EXPECT_TRUE(result.tensor("layer3").is_cuda());
    const auto expected = loadExpected("resnet18_expected.pt");
    // Other kernels sum in another order: 1e-4 of the values' scale, not 1e-3 absolute (their size).
    EXPECT_TRUE(tensorsCloseRelative("layer3 (cuda)", result.tensor("layer3"), expected.at("layer3"), 1e-4));
    EXPECT_TRUE(
        tensorsCloseRelative("layer3:grad (cuda)", result.tensor("layer3:grad"), expected.at("layer3:grad"), 1e-4));
}

TEST(Device, RecorderStatisticsOnCudaMatchTheCpu)
{
    if (!torch::cuda::is_available())
        GTEST_SKIP() << "no CUDA device here";
    at::globalContext().setAllowTF32CuDNN(false);
    at::globalContext().setAllowTF32CuBLAS(false);
    const LabelledSamples saved = readLabelledSamples(fixture("labelled_inputs.pt"));
    std::map<std::string, std::unique_ptr<Recorder>> recorders;
    for (const std::string device : {"cpu", "cuda"}) {
        LoadOptions options;
        options.device = device;
        Engine engine(Model::load(demoModelPath(), options));
        RecorderConfig config;
        config.grabs = {GrabSpec::parse("features.1"), GrabSpec::parse("classifier.2")};
        config.histogramRange = std::make_pair(-1.0, 8.0);
        auto& recorder = *recorders.emplace(device, std::make_unique<Recorder>(config)).first->second;
        recordTensor(engine, recorder, saved.samples, saved.labels, 7);
    }
    const auto cpu = recorders.at("cpu")->results(), cuda = recorders.at("cuda")->results();
    ASSERT_EQ(cpu.size(), cuda.size());
    for (size_t i = 0; i < cpu.size(); ++i) {
        const auto& [key, value] = cpu[i];
        const at::Tensor want = value.toTensor().to(at::kDouble), got = cuda[i].second.toTensor().cpu().to(at::kDouble);
        if (key.find(":histogram") != std::string::npos && key.find("range") == std::string::npos) {
            // Bins computed in float on the GPU: a value on an edge may fall either side.
            EXPECT_LE((got - want).abs().sum().item<double>(), 1e-4 * want.sum().item<double>() + 2) << key;
        } else if (key.find("top_samples") != std::string::npos) {
            // Which samples, best first per channel ([k, C]): equal, except at a rank whose value ties
            // (within 1e-5) with a neighbouring rank's on the CPU, or at the last rank (a tie with the
            // first sample left out): float sums on the GPU may order tied samples either way.
            ASSERT_GT(i, 0u);
            ASSERT_NE(cpu[i - 1].first.find("top_values"), std::string::npos) << key;
            const at::Tensor values = cpu[i - 1].second.toTensor().to(at::kDouble);
            ASSERT_EQ(got.sizes(), want.sizes()) << key;
            const int64_t k = values.size(0);
            at::Tensor tied = at::zeros(values.sizes(), at::kBool);
            tied[k - 1].fill_(true);
            if (k > 1) {
                const double tolerance = 1e-5 * values.abs().max().item<double>();
                const at::Tensor gap = (values.narrow(0, 1, k - 1) - values.narrow(0, 0, k - 1)).abs().le(tolerance);
                tied.narrow(0, 0, k - 1).logical_or_(gap);
                tied.narrow(0, 1, k - 1).logical_or_(gap);
            }
            EXPECT_FALSE((got.ne(want) & ~tied).any().item<bool>()) << key << ": other samples where no values tie";
        } else if (want.abs().max().item<double>() > 0) {
            EXPECT_TRUE(tensorsCloseRelative(key + " (cuda)", got, want, 1e-5));
        } else {
            EXPECT_TRUE(got.equal(want)) << key << ": zero on the CPU, not on the GPU";
        }
    }
}

} // namespace
} // namespace torchscope::test
