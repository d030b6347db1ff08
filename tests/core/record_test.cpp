// Recording over a labelled folder: every reduction and condition against NumPy/PyTorch computed
// in Python with forward hooks on the eager demo model (same weights, same images).
#include "test_support.h"

#include "model/model_setup.h"

#include "record/folder_run.h"
#include "record/recorder.h"

namespace torchscope::test {
namespace {

struct Recording {
    std::unique_ptr<Recorder> recorder;
    FolderRunResult summary;
};

std::shared_ptr<Model> demoModel()
{
    return Model::load(demoModelPath());
}

Recording record(const std::string& reduction, const std::string& condition, int batch = 8,
    ProgressCallback progress = {}, int64_t memoryCap = int64_t{1} << 30,
    std::optional<std::pair<double, double>> histogramRange = std::nullopt)
{
    auto model = demoModel();
    const ModelSetup card = defaultSetup(*model);
    RecorderConfig config;
    config.grabs = {GrabSpec::parse("features.1"), GrabSpec::parse("classifier.2")};
    config.reduction = parseReduction(reduction);
    config.condition = Condition::parse(condition);
    config.topK = 5;
    config.memoryCapBytes = memoryCap;
    config.histogramRange = histogramRange;
    Recording r{std::make_unique<Recorder>(config), {}};
    Engine engine(model);
    FolderRunOptions options;
    options.batchSize = batch;
    r.summary = recordFolder(engine, *r.recorder, ImageFolder::scan(fixture("labelled"), card.labels),
        card.preprocessing, options, progress);
    return r;
}

at::Tensor result(const Recorder& recorder, const std::string& key)
{
    for (const auto& [name, value] : recorder.results())
        if (name == key)
            return value.toTensor();
    ADD_FAILURE() << "no result " << key;
    return {};
}

TEST(Recording, HistogramMatchesNumPy)
{
    const auto expected = loadExpected("labelled_expected.pt");
    for (const std::string key : {"features.1", "classifier.2"}) {
        const at::Tensor range = expected.at("histogram/" + key + "/range");
        const Recording r = record(
            "stats", "all", 7, {}, int64_t{1} << 30, std::make_pair(range[0].item<double>(), range[1].item<double>()));
        const at::Tensor counts = result(*r.recorder, key + ":histogram").to(at::kLong);
        const at::Tensor want = expected.at("histogram/" + key + "/counts").to(at::kLong);
        ASSERT_EQ(counts.numel(), 64) << key;
        ASSERT_GT(want.sum().item<int64_t>(), 0) << key;
        EXPECT_TRUE(counts.equal(want)) << key << "\n ours:  " << counts << "\n NumPy: " << want;
        EXPECT_TRUE(result(*r.recorder, key + ":histogram_outside").equal(expected.at("histogram/" + key + "/outside")))
            << key;
        const at::Tensor outside = expected.at("histogram/" + key + "/outside");
        EXPECT_GT(outside[0].item<int64_t>() + outside[1].item<int64_t>(), 0) << "the range should cut some off";
    }
}

class Reductions : public ::testing::TestWithParam<std::pair<const char*, const char*>> { };

TEST_P(Reductions, MatchPython)
{
    const auto [reduction, condition] = GetParam();
    const auto expected = loadExpected("labelled_expected.pt");
    const Recording r = record(reduction, condition, 7); // batches of 7 do not divide 36: merging is exercised
    for (const std::string key : {"features.1", "classifier.2"}) {
        const std::string prefix = std::string(condition) + "/" + key;
        EXPECT_EQ(r.recorder->samples(key), expected.at(prefix + ":samples").item<int64_t>()) << prefix;
        if (std::string(reduction) == "stats") {
            for (const char* field : {"mean", "var", "min", "max", "zero_fraction"}) {
                const at::Tensor want = expected.at(prefix + "/stats:" + field);
                // Per-channel mean and variance to 1e-5 relative (scaled by the values' magnitude).
                EXPECT_TRUE(tensorsClose(
                    prefix + " " + field, result(*r.recorder, key + ":" + field), want, relativeTolerance(want, 1e-5)));
            }
            EXPECT_TRUE(result(*r.recorder, key + ":top_samples").equal(expected.at(prefix + "/stats:top_samples")))
                << prefix;
            const at::Tensor histogram = result(*r.recorder, key + ":histogram");
            const at::Tensor outside = result(*r.recorder, key + ":histogram_outside");
            const int64_t values = expected.at(prefix + "/none").numel();
            EXPECT_EQ(static_cast<int64_t>(histogram.sum().item<double>()) + outside.sum().item<int64_t>(), values);
        } else {
            const at::Tensor want = expected.at(prefix + "/" + reduction);
            EXPECT_TRUE(
                tensorsClose(prefix + " " + reduction, result(*r.recorder, key), want, relativeTolerance(want, 1e-5)));
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Folder, Reductions,
    ::testing::Values(std::make_pair("stats", "all"), std::make_pair("sum", "all"), std::make_pair("mean", "all"),
        std::make_pair("max", "all"), std::make_pair("min", "all"), std::make_pair("none", "all"),
        std::make_pair("stats", "true:0,9"), std::make_pair("mean", "predicted:7"), std::make_pair("stats", "correct"),
        std::make_pair("none", "wrong")),
    [](const auto& info) {
        std::string name = std::string(info.param.first) + "_" + info.param.second;
        for (auto& c : name)
            c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
        return name;
    });

TEST(Record, FolderLabelsComeFromTheModelsLabels)
{
    auto model = demoModel();
    const auto folder = ImageFolder::scan(fixture("labelled"), defaultSetup(*model).labels);
    EXPECT_EQ(folder.labelSource, "model labels");
    EXPECT_EQ(folder.classLabels, (std::vector<int64_t>{9, 7, 0})); // ankle_boot, sneaker, t-shirt_top
    EXPECT_EQ(ImageFolder::scan(fixture("labelled")).labelSource, "folder order");
}

TEST(Record, CancelKeepsWholeBatchesConsistent)
{
    const Recording r = record("stats", "all", 8, [](const Progress&) { return false; });
    EXPECT_TRUE(r.summary.cancelled);
    EXPECT_EQ(r.recorder->samples("features.1"), 8);
    const auto expected = loadExpected("labelled_expected.pt");
    const at::Tensor want = expected.at("first8/features.1/stats:mean");
    EXPECT_TRUE(
        tensorsClose("first batch mean", result(*r.recorder, "features.1:mean"), want, relativeTolerance(want, 1e-5)));
}

TEST(Record, MemoryCapStopsWithAMessage)
{
    const std::string message = errorOf([] { record("none", "all", 8, {}, 100 * 1024); });
    EXPECT_NE(message.find("memory cap of 0 MiB"), std::string::npos) << message;
    EXPECT_NE(message.find("use a reduction"), std::string::npos) << message;
}

TEST(Record, ConditionsNeedWhatTheyNeed)
{
    auto model = demoModel();
    RecorderConfig config;
    config.grabs = {GrabSpec::parse("features.0")};
    config.condition = Condition::parse("correct");
    Recorder recorder(config);
    Engine engine(model);
    const auto message = errorOf([&] {
        recordFolder(engine, recorder, ImageFolder::fromFiles({fixture("labelled/sneaker/00.png")}),
            Preprocessing::fromJson(R"({"grayscale": true})"), {});
    });
    EXPECT_NE(message.find("needs true labels"), std::string::npos) << message;
    EXPECT_NE(errorOf([] { Condition::parse("maybe"); }).find("unknown condition 'maybe'"), std::string::npos);
    EXPECT_NE(errorOf([] { parseReduction("median"); }).find("unknown reduction 'median'"), std::string::npos);
}

TEST(Record, UnreadableImagesAreSkippedAndReported)
{
    auto model = demoModel();
    RecorderConfig config;
    config.grabs = {GrabSpec::parse("features.0")};
    Recorder recorder(config);
    Engine engine(model);
    const auto summary = recordFolder(engine, recorder,
        ImageFolder::fromFiles({fixture("labelled/sneaker/00.png"), fixture("images/not_an_image.png"),
            fixture("labelled/sneaker/01.png")}),
        Preprocessing::fromJson(R"({"grayscale": true, "resize": 28, "crop": 28})"), {});
    EXPECT_EQ(summary.images, 2);
    ASSERT_EQ(summary.failures.size(), 1u);
    EXPECT_NE(summary.failures[0].second.find("text file"), std::string::npos);
    EXPECT_EQ(recorder.samples("features.0"), 2);
}

TEST(Record, ChannelCsvHasOneLinePerChannel)
{
    const Recording r = record("stats", "all");
    const std::string csv = r.recorder->channelCsv();
    EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 64 + 10); // header, features.1, classifier.2
    EXPECT_EQ(csv.rfind("layer,channel,samples,mean,std,min,max,zero_fraction\n", 0), 0u);
}

} // namespace
} // namespace torchscope::test
