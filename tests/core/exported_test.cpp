// A torch.export program (.pt2) against the same weights scripted: the same module tree, and every
// grab and gradient equal bit for bit (both run the same ATen kernels in the TorchScript
// interpreter); truncation leaves nothing after the cut; on CUDA the CPU's values.
#include "test_support.h"

#include "common/error.h"
#include "graph/instrumenter.h"

#include <torch/cuda.h>

namespace torchscope::test {
namespace {

TEST(Exported, TheTreeIsTheScriptedModelsTree)
{
    const auto exported = loadModel("resnet18_exported.pt2");
    const auto scripted = loadModel("resnet18_scripted.pt");
    ASSERT_TRUE(exported->exportedProgram().has_value());
    EXPECT_FALSE(scripted->exportedProgram().has_value());
    ASSERT_EQ(exported->paths(), scripted->paths());
    for (const auto& m : scripted->modules()) {
        const auto* other = exported->find(m.path);
        EXPECT_EQ(other->shortType, m.shortType) << m.path;
        EXPECT_EQ(other->totalParameters, m.totalParameters) << m.path;
        EXPECT_EQ(other->callSites.size(), m.callSites.size()) << m.path;
    }
    EXPECT_EQ(exported->find("")->qualifiedType, "torchvision.models.resnet.ResNet");
    EXPECT_EQ(exported->forwardArguments().size(), 1u);
    EXPECT_NE(exported->exportedProgram()->dynamicDimensions.size(), 0u);
}

TEST(Exported, GrabsAndGradientsEqualTheScriptedModel)
{
    Engine exported(loadModel("resnet18_exported.pt2"));
    Engine scripted(loadModel("resnet18_scripted.pt"));
    Request request;
    request.grabs = {GrabSpec::parse("*"), GrabSpec::parse("layer1.0.conv2:in0")};
    for (const char* path : {"conv1", "bn1", "layer2.0.conv2", "layer3", "fc"})
        request.grabs.push_back(GrabSpec::parse(std::string(path) + ":grad"));
    request.targetClass = 3;
    const at::Tensor x = loadTensor("resnet18_input.pt");
    const auto ours = exported.run(request, {x});
    const auto reference = scripted.run(request, {x});
    ASSERT_EQ(ours.values.size(), reference.values.size());
    for (const auto& [key, value] : reference.values) {
        if (!value.isTensor())
            continue;
        EXPECT_TRUE(at::equal(ours.tensor(key), value.toTensor())) << key;
    }
}

TEST(Exported, TruncationLeavesNothingAfterTheCut)
{
    const auto model = loadModel("resnet18_exported.pt2");
    ResolvedRequest request;
    request.truncateAt = "layer2";
    const std::string graph = instrument(model->module(), request)->function->graph()->toString();
    EXPECT_NE(graph.find("name=\"layer2\""), std::string::npos);
    for (const char* later : {"name=\"layer3\"", "name=\"layer4\"", "name=\"fc\"", "aten::linear"})
        EXPECT_EQ(graph.find(later), std::string::npos) << later << " is still in\n" << graph;
}

TEST(Exported, AnotherBatchSizeRunsAndAWrongImageSizeIsRefused)
{
    Engine engine(loadModel("resnet18_exported.pt2"));
    const at::Tensor x = loadTensor("resnet18_input.pt");
    EXPECT_EQ(engine.run(Request{}, {x.slice(0, 0, 1)}).tensor("output").size(0), 1);
    try {
        engine.run(Request{}, {x.slice(2, 0, 200)});
        FAIL() << "a 200-pixel-high input ran through a program exported at 224";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("fixed at 224"), std::string::npos) << e.what();
    }
}

TEST(Device, ExportedProgramOnCudaMatchesTheCpu)
{
    if (!torch::cuda::is_available())
        GTEST_SKIP() << "no CUDA device here";
    at::globalContext().setAllowTF32CuDNN(false);
    at::globalContext().setAllowTF32CuBLAS(false);
    LoadOptions cuda;
    cuda.device = "cuda";
    Engine onGpu(Model::load(fixture("resnet18_exported.pt2"), cuda));
    Engine onCpu(loadModel("resnet18_exported.pt2"));
    Request request;
    request.grabs = {GrabSpec::parse("layer2"), GrabSpec::parse("layer3:grad")};
    request.targetClass = 3;
    const at::Tensor x = loadTensor("resnet18_input.pt");
    const auto gpu = onGpu.run(request, {x});
    const auto cpu = onCpu.run(request, {x});
    for (const char* key : {"output", "layer2", "layer3:grad"}) {
        EXPECT_TRUE(gpu.tensor(key).is_cuda()) << key;
        EXPECT_TRUE(tensorsCloseRelative(std::string(key) + " (cuda)", gpu.tensor(key).cpu(), cpu.tensor(key), 1e-4));
    }
}

} // namespace
} // namespace torchscope::test
