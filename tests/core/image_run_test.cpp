// The per-image run (the window's, and run --each-image) against forward hooks on the eager demo
// model in Python: same weights, the labelled folder's 36 images, one at a time here.
#include "test_support.h"

#include "export/pt_export.h"
#include "graph/engine.h"
#include "graph/model_output.h"
#include "imaging/image_folder.h"
#include "model/model_setup.h"
#include "run/image_run.h"

#include <cmath>
#include <filesystem>

namespace torchscope::test {
namespace {

struct DemoRun {
    std::shared_ptr<Model> model = Model::load(demoModelPath());
    Engine engine{model};
    ImageRunner runner{model, engine};
    ImageRunConfig config;

    DemoRun()
    {
        config.setup = defaultSetup(*model);
        config.request.grabs = {GrabSpec::parse("features.1"), GrabSpec::parse("classifier.2")};
        for (const auto& image : ImageFolder::scan(fixture("labelled"), config.setup.labels).images)
            config.images.push_back(image.path);
    }
};

at::Tensor tensorOf(const FloatTensor& value)
{
    return at::tensor(value.values).reshape(value.shape);
}

TEST(ImageRun, EveryImageMatchesForwardHooks)
{
    const auto expected = loadExpected("labelled_expected.pt");
    DemoRun demo;
    demo.config.images.insert(demo.config.images.begin() + 3, fixture("images/not_an_image.png"));
    const ImageRunResult result = demo.runner.run(demo.config);
    ASSERT_EQ(result.images.size(), 36u);
    ASSERT_EQ(result.failures.size(), 1u);
    EXPECT_EQ(result.failures[0].first, fixture("images/not_an_image.png"));
    EXPECT_NE(result.failures[0].second.find("not an image"), std::string::npos) << result.failures[0].second;
    EXPECT_TRUE(result.error.empty());
    EXPECT_FALSE(result.modules.empty()) << "the first run makes the dry run";

    const at::Tensor features = expected.at("all/features.1/none");
    const at::Tensor logits = expected.at("all/classifier.2/none");
    for (size_t i = 0; i < result.images.size(); ++i) {
        const ImageRunItem& item = result.images[i];
        const auto n = static_cast<int64_t>(i);
        EXPECT_TRUE(tensorsClose(item.path, tensorOf(item.values.at("features.1")), features[n], 1e-5));
        EXPECT_TRUE(tensorsClose(item.path, tensorOf(item.values.at("classifier.2")), logits[n], 1e-5));
        ASSERT_EQ(item.prediction.kind, OutputKind::Classes);
        ASSERT_EQ(item.prediction.top.size(), 5u);
        EXPECT_EQ(item.prediction.top[0].label, labelOf(demo.config.setup.labels, logits[n].argmax().item<int64_t>()));
        // The five most probable classes with softmax's probabilities (the images are decoded by
        // OpenCV here and PIL there: logits ~1e-6 apart, so the order of near ties is not compared).
        const at::Tensor probabilities = logits[n].softmax(0);
        const double fifth = std::get<0>(probabilities.topk(5))[4].item<double>();
        for (const Prediction& p : item.prediction.top) {
            EXPECT_NEAR(p.probability, probabilities[p.index].item<double>(), 1e-5)
                << item.path << " class " << p.index;
            EXPECT_GE(p.probability, fifth - 1e-5) << item.path << " class " << p.index;
        }
        EXPECT_EQ(item.modelInput.shape, (std::vector<int64_t>{1, 28, 28}));
        EXPECT_GT(item.thumbnailWidth, 0);
    }
    // Statistics pool every image (one pass per image, merged): NumPy's per-channel mean,
    // population std, minimum, maximum and share of zeros over the 36.
    const LayerStatistics& stats = result.statistics.at("features.1");
    const at::Tensor mean = expected.at("all/features.1/stats:mean");
    const at::Tensor variance = expected.at("all/features.1/stats:var");
    const at::Tensor minimum = expected.at("all/features.1/stats:min"),
                     maximum = expected.at("all/features.1/stats:max");
    const at::Tensor zeros = expected.at("all/features.1/stats:zero_fraction");
    ASSERT_EQ(stats.channelMean.size(), static_cast<size_t>(mean.size(0)));
    ASSERT_EQ(stats.channelStd.size(), static_cast<size_t>(mean.size(0)));
    for (int64_t c = 0; c < mean.size(0); ++c) {
        const auto i = static_cast<size_t>(c);
        EXPECT_NEAR(stats.channelMean[i], mean[c].item<double>(), 1e-5) << "channel " << c;
        EXPECT_NEAR(stats.channelStd[i], std::sqrt(variance[c].item<double>()), 1e-5) << "channel " << c;
        EXPECT_NEAR(stats.channelMin[i], minimum[c].item<double>(), 1e-5) << "channel " << c;
        EXPECT_NEAR(stats.channelMax[i], maximum[c].item<double>(), 1e-5) << "channel " << c;
        // Exact zeros (ReLU's) do not move with the decoders' ~1e-6 differences.
        EXPECT_NEAR(stats.channelZeroFraction[i], zeros[c].item<double>(), 1e-12) << "channel " << c;
    }
    EXPECT_EQ(stats.samples, 36);
}

TEST(ImageRun, WritesWhatPythonReads)
{
    const auto expected = loadExpected("labelled_expected.pt");
    DemoRun demo;
    EXPECT_FALSE(demo.runner.hasRecorded());
    demo.runner.run(demo.config);
    const std::string path = (freshFolder("image_run") / "recorded.pt").string();
    EXPECT_TRUE(demo.runner.writeRecorded(path).empty());
    const c10::IValue saved = readTorchSaveFile(path);
    std::filesystem::remove(path);
    const auto dict = saved.toGenericDict();
    EXPECT_TRUE(tensorsClose("features.1", dict.at("features.1").toTensor(), expected.at("all/features.1/none"), 1e-5));
    EXPECT_EQ(dict.at("output").toTensor().sizes().vec(), (std::vector<int64_t>{36, 10}));
}

TEST(ImageRun, CancelKeepsWhatRan)
{
    DemoRun demo;
    const ImageRunResult result = demo.runner.run(demo.config, [](const Progress& p) { return p.done < 5; });
    EXPECT_TRUE(result.cancelled);
    ASSERT_EQ(result.images.size(), 5u);
    EXPECT_EQ(result.images[4].path, demo.config.images[4]);
}

TEST(ImageRun, TruncationCutsAwayTheRest)
{
    DemoRun demo;
    demo.config.images.resize(2);
    demo.config.request.grabs = {GrabSpec::parse("features.1")};
    demo.config.request.truncateAt = "features.1";
    const ImageRunResult result = demo.runner.run(demo.config);
    ASSERT_EQ(result.images.size(), 2u);
    EXPECT_EQ(result.images[0].prediction.kind, OutputKind::Other) << "a truncated output is not the scores";
    EXPECT_NE(std::find(result.cutAway.begin(), result.cutAway.end(), "classifier.2"), result.cutAway.end());
    EXPECT_EQ(std::find(result.cutAway.begin(), result.cutAway.end(), "features.0"), result.cutAway.end());
}

TEST(ImageRun, AWrongInputSizeIsTheSetupsProblem)
{
    DemoRun demo;
    demo.config.images.resize(3);
    demo.config.setup.preprocessing = ModelSetup().preprocessing; // ImageNet's: colour 224 x 224
    const ImageRunResult result = demo.runner.run(demo.config);
    EXPECT_TRUE(result.images.empty());
    EXPECT_EQ(result.failures.size(), 3u);
    EXPECT_FALSE(result.error.empty());
    EXPECT_NE(result.setupAdvice.find("[1, 3, 224, 224]"), std::string::npos) << result.setupAdvice;
}

TEST(ImageRun, RefusesAnUnknownGrabBeforeReadingImages)
{
    DemoRun demo;
    demo.config.request.grabs = {GrabSpec::parse("features.99")};
    EXPECT_NE(errorOf([&] { demo.runner.run(demo.config); }).find("features.99"), std::string::npos);
}

} // namespace
} // namespace torchscope::test
