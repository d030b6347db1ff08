// The model setup: its JSON form, labels files, the preprocessing it adds (value scale, BGR, an
// exact size) against torchvision, and a copy of a model with the setup stored in it.
#include "test_support.h"

#include "graph/setup_advice.h"
#include "model/model_setup.h"
#include "preprocess/preprocess_tensor.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace torchscope::test {
namespace {

std::string writeTemp(const std::string& name, const std::string& text)
{
    const auto path = freshFolder("setup_text") / name;
    std::ofstream(path, std::ios::binary) << text;
    return path.string();
}

ModelSetup faceLikeSetup()
{
    ModelSetup setup;
    setup.preprocessing = Preprocessing::none();
    setup.preprocessing.resizeHeight = setup.preprocessing.resizeWidth = 112;
    setup.preprocessing.scale = 255;
    setup.preprocessing.bgr = true;
    setup.preprocessing.mean = {1, 2, 3};
    setup.preprocessing.std = {4, 5, 6};
    setup.labels = {"neutral", "happy", "sad"};
    setup.scores = "logits";
    return setup;
}

TEST(ModelSetup, JsonRoundTrip)
{
    const ModelSetup setup = faceLikeSetup();
    const ModelSetup back = ModelSetup::fromJson(setup.toJson());
    EXPECT_EQ(back, setup);
    EXPECT_EQ(back.preprocessing.resizeHeight, 112);
    EXPECT_TRUE(back.preprocessing.bgr);
    EXPECT_EQ(back.preprocessing.scale, 255);
    EXPECT_EQ(ModelSetup::fromJson(ModelSetup().toJson()), ModelSetup());
}

TEST(ModelSetup, ABarePreprocessingObjectKeepsLabelsFromTheBase)
{
    ModelSetup base;
    base.labels = {"a", "b"};
    const ModelSetup setup = ModelSetup::fromJson(R"({"crop": 32, "scale": 255, "channel_order": "BGR"})", base);
    EXPECT_EQ(setup.labels, base.labels);
    EXPECT_EQ(setup.preprocessing.cropHeight, 32);
    EXPECT_EQ(setup.preprocessing.resize, 0);
    EXPECT_TRUE(setup.preprocessing.bgr);
}

TEST(ModelSetup, OtherFieldsOfACardAreKept)
{
    const ModelSetup setup = ModelSetup::fromJson(R"({"name": "demo", "labels": ["x"], "test_accuracy": 0.9})");
    EXPECT_NE(setup.toJson().find("\"test_accuracy\": 0.9"), std::string::npos);
    EXPECT_NE(setup.toJson().find("\"name\": \"demo\""), std::string::npos);
}

TEST(ModelSetup, BadFieldsAreNamed)
{
    EXPECT_NE(errorOf([] {
        ModelSetup::fromJson(R"({"preprocess": {"chanel_order": "BGR"}})");
    }).find("unknown field 'chanel_order'"),
        std::string::npos);
    EXPECT_NE(
        errorOf([] { ModelSetup::fromJson(R"({"preprocess": {"channel_order": "GRB"}})"); }).find("\"RGB\" or \"BGR\""),
        std::string::npos);
    EXPECT_NE(
        errorOf([] { ModelSetup::fromJson(R"({"preprocess": {"scale": 0}})"); }).find("'scale'"), std::string::npos);
    EXPECT_NE(
        errorOf([] { ModelSetup::fromJson(R"({"labels": [1, 2]})"); }).find("list of strings"), std::string::npos);
    EXPECT_NE(errorOf([] { ModelSetup::fromJson("[1]"); }).find("JSON object"), std::string::npos);
    // A size of [H, 0] used to parse and then write itself back as no resize at all.
    EXPECT_NE(errorOf([] {
        ModelSetup::fromJson(R"({"preprocess": {"resize": [40, 0]}})");
    }).find("'resize' is [40, 0]: a height and a width must both be positive"),
        std::string::npos);
    EXPECT_NE(errorOf([] { ModelSetup::fromJson(R"({"preprocess": {"crop": [0, 7]}})"); }).find("'crop' is [0, 7]"),
        std::string::npos);
    EXPECT_NE(
        errorOf([] { ModelSetup::fromJson(R"({"preprocess": {"resize": 4294967297}})"); }).find("from 0 to 65536"),
        std::string::npos);
    EXPECT_EQ(ModelSetup::fromJson(R"({"preprocess": {"resize": 0}})").preprocessing.resize, 0);
}

TEST(ModelSetup, LabelsFromTextAndJson)
{
    EXPECT_EQ(readLabelsFile(writeTemp("labels.txt", "cat\r\ndog\n\n")), (std::vector<std::string>{"cat", "dog"}));
    EXPECT_EQ(readLabelsFile(writeTemp("labels.json", R"(["cat", "dog"])")), (std::vector<std::string>{"cat", "dog"}));
    EXPECT_EQ(readLabelsFile(writeTemp("labels_obj.json", R"({"labels": ["a"]})")), (std::vector<std::string>{"a"}));
    EXPECT_NE(errorOf([] { readLabelsFile(writeTemp("empty.txt", "\n")); }).find("is empty"), std::string::npos);
    EXPECT_NE(errorOf([] { readLabelsFile(fixture("images/rgb.png")); }).find("a PNG image"), std::string::npos);
    EXPECT_EQ(readLabelsFile(fixture("fashion_labels.txt")).size(), 10u);
}

TEST(ModelSetup, DescribesItselfForTheStatusBar)
{
    EXPECT_EQ(
        ModelSetup().describe(), "224×224 (shorter side 256, centre crop) · RGB · 0..1, ImageNet mean/std · no labels");
    EXPECT_EQ(faceLikeSetup().describe(),
        "112×112 (stretched) · BGR · 0..255, mean [1, 2, 3] std [4, 5, 6] · 3 labels · scores: logits");
}

TEST(ModelSetup, ValuePresetsAreRecognised)
{
    Preprocessing p;
    for (auto preset :
        {ValuePreset::ImageNet, ValuePreset::ZeroToOne, ValuePreset::ZeroTo255, ValuePreset::MinusOneToOne}) {
        applyValuePreset(p, preset);
        EXPECT_EQ(valuePresetOf(p), preset);
    }
    p.mean = {0.1, 0.2, 0.3};
    EXPECT_EQ(valuePresetOf(p), ValuePreset::Custom);
}

class ScaledBgrLikeTorchvision : public ::testing::TestWithParam<const char*> { };

TEST_P(ScaledBgrLikeTorchvision, StretchScaleFlipNormalize)
{
    const auto expected = loadExpected("images_expected.pt");
    const std::string name = GetParam();
    const Preprocessing p = ModelSetup::fromJson(R"({"resize": [40, 50], "scale": 255, "channel_order": "BGR",
        "mean": [100, 110, 120], "std": [50, 60, 70]})")
                                .preprocessing;
    const at::Tensor actual = preprocessImage(expected.at(name + ":decoded"), p);
    // The same float32 operations as torchvision's in the same order: equal, not merely close.
    EXPECT_TRUE(tensorsClose(name, actual, expected.at(name + ":bgr255")));
    // Undone, it is the stretched picture in [0, 1], RGB.
    const at::Tensor picture = pictureOfInput(actual, p);
    EXPECT_EQ(picture.sizes(), (at::IntArrayRef{40, 50, 3}));
    Preprocessing stretchOnly;
    stretchOnly.resizeHeight = 40;
    stretchOnly.resizeWidth = 50;
    EXPECT_TRUE(tensorsClose(name + " picture", picture,
        preprocessImage(expected.at(name + ":decoded"), stretchOnly).expand({3, -1, -1}).permute({1, 2, 0}).clamp(0, 1),
        1e-6)); // undoing the normalisation, (x * std + mean) / 255, rounds in float32
}

INSTANTIATE_TEST_SUITE_P(Images, ScaledBgrLikeTorchvision, ::testing::Values("rgb.png", "grey.png"),
    [](const auto& info) { return std::string(info.param).substr(0, std::string(info.param).find('.')); });

TEST(ModelSetup, SavedIntoACopyOfTheModel)
{
    const std::string copy = (freshFolder("setup_copy") / "plain_setup.pt").string();
    ModelSetup setup = faceLikeSetup();
    setup.labels = readLabelsFile(fixture("fashion_labels.txt"));
    writeModelWithSetup(fixture("fashion_plain.pt"), copy, setup);
    auto original = loadModel("fashion_plain.pt");
    auto saved = Model::load(copy);
    EXPECT_FALSE(storedSetup(*original).has_value());
    ASSERT_TRUE(storedSetup(*saved).has_value());
    EXPECT_EQ(*storedSetup(*saved), setup);
    // The weights and code came along unchanged: the same output for the same input.
    const at::Tensor x = at::randn({2, 1, 28, 28});
    Engine a(original), b(saved);
    EXPECT_TRUE(a.run({}, {x}).tensor("output").equal(b.run({}, {x}).tensor("output")));
    // Saved again over itself, it replaces the setup (atomically).
    setup.labels = {"only"};
    writeModelWithSetup(copy, copy, setup);
    EXPECT_EQ(storedSetup(*Model::load(copy))->labels, std::vector<std::string>{"only"});
    std::remove(copy.c_str());
}

TEST(SetupAdvice, ReadsTheFirstAndLastLayersAndFindsSizesThatRun)
{
    auto model = loadModel("fashion_plain.pt");
    const SetupAdvice advice = adviseSetup(*model, ModelSetup(), 600.0); // time enough to try every size
    EXPECT_EQ(advice.inputChannels, 1);
    EXPECT_EQ(advice.firstLayer, "features.0.conv");
    EXPECT_EQ(advice.outputs, 10);
    EXPECT_EQ(advice.lastLayer, "classifier.2");
    // It pools globally: every size tried runs on one channel.
    EXPECT_TRUE(advice.triedAll);
    EXPECT_TRUE(advice.failedSizes.empty()) << advice.failure;
    EXPECT_TRUE(advice.anySize());
}

TEST(SetupAdvice, AWrongInputPointsAtTheSetup)
{
    auto model = loadModel("fashion_plain.pt");
    Engine engine(model);
    const ModelSetup imagenet;
    const at::Tensor x = at::randn({1, 3, 224, 224});
    const std::string error = errorOf([&] { engine.run({}, {x}); });
    const std::string advice = inputMismatchAdvice(error, x.sizes().vec(), imagenet);
    EXPECT_NE(advice.find("[1, 3, 224, 224]"), std::string::npos) << error;
    EXPECT_NE(advice.find("number of channels does not fit"), std::string::npos);
    EXPECT_TRUE(inputMismatchAdvice("the model failed: out of memory", {1}, imagenet).empty());
}

} // namespace
} // namespace torchscope::test
