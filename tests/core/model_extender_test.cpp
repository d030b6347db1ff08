// ModelExtender / ExtendedModelStump, probe export and import, the activation cache and the
// layer sweep, on the demo model and a two-class Fashion-MNIST set (footwear vs. the rest).
#include "test_support.h"

#include "export/pt_export.h"
#include "probe/activation_cache.h"
#include "probe/layer_sweep.h"
#include "probe/linear_probe.h"
#include "probe/model_extender.h"
#include "probe/probe_dataset.h"

#include <torch/script.h>

#include <filesystem>

namespace torchscope::test {
namespace {

struct ProbeData {
    at::Tensor samples, labels;
};

ProbeData probeData()
{
    const auto dict = readTorchSaveFile(fixture("probe_inputs.pt")).toGenericDict();
    return {dict.at("samples").toTensor(), dict.at("labels").toTensor()};
}

ProbeSamples footwearSamples()
{
    const ProbeData data = probeData();
    return tensorSamples(data.samples, data.labels, 32, "probe_inputs", {"footwear", "rest"});
}

LinearProbe trainedProbe(const std::string& layer)
{
    Engine engine(Model::load(demoModelPath()));
    ProbeSamples samples = footwearSamples();
    const ProbeDataset dataset = collectProbeDataset(engine, {layer}, ProbePooling::Average, samples);
    return LinearProbe{
        layer, ProbePooling::Average, dataset.classNames, trainLinearProbe(dataset.features.at(layer), dataset.labels)};
}

std::shared_ptr<torch::jit::Module> identityModule()
{
    auto module = std::make_shared<torch::jit::Module>("Identity");
    module->define("def forward(self, x: Tensor) -> Tensor:\n    return x\n");
    return module;
}

TEST(ModelExtender, NamesAreUniqueAcrossLayers)
{
    ModelExtender extender(Model::load(demoModelPath()));
    extender.registerExtension("features.0", "edges", identityModule());
    const std::string duplicate = errorOf([&] { extender.registerExtension("features.2", "edges", identityModule()); });
    EXPECT_NE(duplicate.find("an extension named 'edges' is already registered (on 'features.0')"), std::string::npos)
        << duplicate;
    const std::string unknownName = errorOf([&] { extender.unregisterExtension("shapes"); });
    EXPECT_NE(unknownName.find("no extension named 'shapes' is registered; registered: 'edges'"), std::string::npos)
        << unknownName;
    const std::string unknownPath = errorOf([&] { extender.registerExtension("features.9", "x", identityModule()); });
    EXPECT_NE(unknownPath.find("features.9"), std::string::npos) << unknownPath;
    EXPECT_NE(unknownPath.find("features.0"), std::string::npos) << "suggests the closest path: " << unknownPath;

    extender.unregisterExtension("edges");
    EXPECT_TRUE(extender.nameRegistrations().empty());
    EXPECT_NE(errorOf([&] { extender.unregisterExtension("edges"); }).find("(there are none)"), std::string::npos);
}

TEST(ModelExtender, RegistrationViewsAndOutputs)
{
    auto model = Model::load(demoModelPath());
    ModelExtender extender(model);
    const ProbeExtension probe = toExtension(trainedProbe("features.1"));
    extender.registerProbe("footwear", probe);
    extender.registerExtension("features.1", "raw", identityModule());
    extender.registerExtension("features.2", "deep", identityModule());
    const auto names = extender.nameRegistrations();
    EXPECT_EQ(names.at("features.1"), (std::vector<std::string>{"footwear", "raw"}));
    EXPECT_EQ(names.at("features.2"), (std::vector<std::string>{"deep"}));
    EXPECT_EQ(extender.extensions().at("features.1").size(), 2u);

    const at::Tensor x = probeData().samples.narrow(0, 0, 8);
    const ExtendedOutput out = extender.forward({x});
    Engine plain(model);
    Request request;
    request.grabs = {GrabSpec::parse("features.1"), GrabSpec::parse("features.2")};
    const RunResult expected = plain.run(request, {x});
    ASSERT_TRUE(out.main.has_value());
    EXPECT_TRUE(tensorsClose("main output", out.main->toTensor(), expected.tensor("output")));
    EXPECT_TRUE(tensorsClose("raw", out.extensions.at("raw"), expected.tensor("features.1")));
    EXPECT_TRUE(tensorsClose("deep", out.extensions.at("deep"), expected.tensor("features.2")));
    const auto scores = probe.module->forward({expected.tensor("features.1")}).toTensor();
    EXPECT_TRUE(tensorsClose("probe", out.extensions.at("footwear"), scores));
    EXPECT_EQ(scores.sizes().vec(), (std::vector<int64_t>{8, 1}));
}

TEST(ModelExtender, WithoutTheMainOutputTheRestOfTheNetworkIsNotComputed)
{
    // A 4x4 image is too small for features.2's pooling: the full forward fails, the stump that
    // ends at features.0 never reaches it.
    ModelExtender extender(Model::load(demoModelPath()));
    extender.registerExtension("features.0", "early", identityModule());
    const at::Tensor tiny = at::randn({1, 1, 4, 4});
    EXPECT_NE(errorOf([&] { extender.forward({tiny}, /*returnOrigOut=*/true); }), "");
    const ExtendedOutput out = extender.forward({tiny}, /*returnOrigOut=*/false);
    EXPECT_FALSE(out.main.has_value());
    EXPECT_EQ(out.extensions.at("early").sizes().vec(), (std::vector<int64_t>{1, 32, 2, 2}));
    EXPECT_EQ(extender.stumpEnd().value_or("none"), "features.0");

    // The stump ends at the last layer read, an ancestor counting as after its children.
    extender.registerExtension("features", "all", identityModule());
    extender.registerExtension("features.1.conv", "inner", identityModule());
    EXPECT_EQ(extender.stumpEnd().value_or("none"), "features");
}

TEST(ProbeExport, TorchScriptAndStateDictReloadToTheSameScores)
{
    const LinearProbe probe = trainedProbe("features.2");
    const auto dir = freshFolder("probe_export");
    saveProbeModule((dir / "probe.pt").string(), probe);
    saveProbeStateDict((dir / "probe_state.pt").string(), probe);

    const at::Tensor activations = at::randn({5, 128, 3, 3});
    const at::Tensor expected = applyProbe(probe.training, probeFeatures(activations));
    for (const char* file : {"probe.pt", "probe_state.pt"}) {
        const ProbeExtension loaded = loadProbeExtension((dir / file).string());
        EXPECT_EQ(loaded.layer, "features.2") << file;
        EXPECT_EQ(loaded.classNames, (std::vector<std::string>{"footwear", "rest"})) << file;
        EXPECT_TRUE(tensorsClose(file, loaded.module->forward({activations}).toTensor(), expected, 1e-5));
    }
    const std::string notAProbe = errorOf([] { loadProbeExtension(fixture("images/grey.png")); });
    EXPECT_NE(notAProbe.find("is not a probe: this is a PNG image"), std::string::npos) << notAProbe;
    const std::string modelWeights = errorOf([] { loadProbeExtension(fixture("bad_state_dict.pt")); });
    EXPECT_NE(modelWeights.find("is not a probe: this is a state_dict"), std::string::npos) << modelWeights;
    const std::string otherDict = errorOf([] { loadProbeExtension(fixture("labelled_inputs.pt")); });
    EXPECT_NE(otherDict.find("is a dict but not a probe state dict: it has no tensor 'weight'"), std::string::npos)
        << otherDict;
}

TEST(ActivationCache, SecondCollectionRunsNothingAndANewCheckpointRunsAgain)
{
    const auto dir = freshFolder("cache");
    std::filesystem::create_directories(dir / "cache");
    const std::string modelPath = (dir / "model.pt").string();
    std::filesystem::copy_file(demoModelPath(), modelPath);
    const std::vector<std::string> layers{"features.1", "features.2"};

    ActivationCache cache((dir / "cache").string());
    Engine first(Model::load(modelPath));
    ProbeSamples samples = footwearSamples();
    const ProbeDataset fresh = collectProbeDataset(first, layers, ProbePooling::Average, samples, &cache);
    EXPECT_EQ(fresh.samplesRun, 120);
    EXPECT_TRUE(fresh.cachedLayers.empty());

    ProbeSamples again = footwearSamples();
    const ProbeDataset cached = collectProbeDataset(first, layers, ProbePooling::Average, again, &cache);
    EXPECT_EQ(cached.samplesRun, 0);
    EXPECT_EQ(cached.cachedLayers, layers);
    EXPECT_TRUE(tensorsClose("cached", cached.features.at("features.2"), fresh.features.at("features.2")));
    EXPECT_TRUE(cached.labels.equal(fresh.labels));

    // On disk: a new process (a new cache object) finds the features too.
    ActivationCache reopened((dir / "cache").string());
    ProbeSamples third = footwearSamples();
    EXPECT_EQ(collectProbeDataset(first, layers, ProbePooling::Average, third, &reopened).samplesRun, 0);

    // A retrained checkpoint saved over the same path must not reuse them.
    std::filesystem::copy_file(
        fixture("demo_retrained.pt"), modelPath, std::filesystem::copy_options::overwrite_existing);
    Engine retrained(Model::load(modelPath));
    ProbeSamples fourth = footwearSamples();
    const ProbeDataset renewed = collectProbeDataset(retrained, layers, ProbePooling::Average, fourth, &cache);
    EXPECT_EQ(renewed.samplesRun, 120);
    EXPECT_FALSE(at::allclose(renewed.features.at("features.2"), fresh.features.at("features.2")));
    // Another pooling is another entry.
    ProbeSamples fifth = footwearSamples();
    EXPECT_EQ(collectProbeDataset(retrained, {"features.2"}, ProbePooling::Flatten, fifth, &cache)
                  .features.at("features.2")
                  .size(1),
        128 * 3 * 3);
}

TEST(ActivationCache, CancelledCollectionKeepsNothing)
{
    Engine engine(Model::load(demoModelPath()));
    ActivationCache cache;
    ProbeSamples samples = footwearSamples();
    int calls = 0;
    const ProbeDataset dataset = collectProbeDataset(
        engine, {"features.1"}, ProbePooling::Average, samples, &cache, [&](const Progress&) { return ++calls < 2; });
    EXPECT_TRUE(dataset.cancelled);
    EXPECT_EQ(dataset.samplesRun, 64); // two batches of 32
    EXPECT_EQ(cache.entries(), 0u);
}

TEST(LayerSweep, FootwearIsFoundInEveryBlockAndTheBestIsMarked)
{
    Engine engine(Model::load(demoModelPath()));
    const std::vector<std::string> layers{"features.0", "features.1", "features.2", "classifier.2"};
    ProbeSamples samples = footwearSamples();
    const ProbeDataset dataset = collectProbeDataset(engine, layers, ProbePooling::Average, samples);
    const LayerSweepResult sweep = sweepLayers(dataset, layers);
    ASSERT_EQ(sweep.layers.size(), 4u);
    ASSERT_GE(sweep.best, 0);
    for (const auto& l : sweep.layers)
        std::cout << l.layer << ": validation accuracy " << l.probe.validationAccuracy << '\n';
    // 30 held-out images, half of them footwear: chance is 0.5.
    EXPECT_GE(sweep.layers[2].probe.validationAccuracy, 0.9);
    EXPECT_GE(sweep.layers[3].probe.validationAccuracy, 0.9);
    for (const auto& l : sweep.layers)
        EXPECT_LE(l.probe.validationAccuracy, sweep.layers[static_cast<size_t>(sweep.best)].probe.validationAccuracy);
    EXPECT_EQ(sweep.layers[0].features, 32);
    const std::string csv = sweepCsv(sweep);
    EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 5);
    EXPECT_EQ(csv.rfind("path,features,train_accuracy,validation_accuracy,best_epoch\nfeatures.0,32,", 0), 0u) << csv;
}

} // namespace
} // namespace torchscope::test
