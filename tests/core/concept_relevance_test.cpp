// CRP's core (relevance/concept_relevance.h) on the demo model: the channel choice as the CLI parses
// it, the analysis through its context against its operation, linearity (every channel's conditional
// map adds up to the whole map), and a cancelled run keeping the images it finished. zennit-crp is
// the oracle of the numbers in tests/cli/test_crp.py.
#include "test_support.h"

#include "graph/analysis_context.h"
#include "graph/engine.h"
#include "model/model.h"
#include "model/model_setup.h"
#include "relevance/concept_relevance.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>

namespace torchscope::test {
namespace {

ConceptRelevanceRequest demoRequest()
{
    ConceptRelevanceRequest request;
    request.images = {demoImage("bag.png"), demoImage("coat.png"), demoImage("sandal.png")};
    request.setup = storedSetup(*Model::load(demoModelPath())).value_or(ModelSetup{});
    request.layer = "features.1";
    return request;
}

TEST(ChannelChoice, ParsesTopAndLists)
{
    EXPECT_EQ(ChannelChoice::parse("top:3").top, 3);
    EXPECT_TRUE(ChannelChoice::parse("top:3").channels.empty());
    EXPECT_EQ(ChannelChoice::parse("1, 5,9").channels, (std::vector<int64_t>{1, 5, 9}));
    EXPECT_EQ(ChannelChoice::parse("1,5,9").toString(), "1,5,9");
    EXPECT_EQ(ChannelChoice::parse("top:12").toString(), "top:12");
    EXPECT_NE(errorOf([] { ChannelChoice::parse("top:0"); }).find("at least 1"), std::string::npos);
    EXPECT_NE(errorOf([] { ChannelChoice::parse("top:x"); }).find("'x'"), std::string::npos);
    EXPECT_NE(errorOf([] { ChannelChoice::parse("3,-1"); }).find("'-1'"), std::string::npos);
    EXPECT_NE(errorOf([] { ChannelChoice::parse(""); }).find("top:K"), std::string::npos);
}

TEST(ConceptRelevance, ThroughItsContextEveryChannelAddsUpToTheWholeMap)
{
    ConceptRelevanceRequest request = demoRequest();
    request.channels.channels.resize(64);
    for (int64_t c = 0; c < 64; ++c)
        request.channels.channels[static_cast<size_t>(c)] = c;
    LoadedModels models;
    int parts = 0;
    AnalysisContext context{models, ModelKey{demoModelPath()}, {}, {}};
    context.partial = [&](const std::shared_ptr<const void>&) { ++parts; };
    const ConceptRelevanceResult result = ConceptRelevanceAnalysis::run(context, request);
    ASSERT_EQ(result.images.size(), 3u);
    EXPECT_EQ(parts, 3) << "each image is handed over as it is done";
    EXPECT_EQ(result.channelCount, 64);
    EXPECT_FALSE(result.tokens);
    EXPECT_EQ(result.layerShape, (std::vector<int64_t>{64, 7, 7}));
    for (const auto& image : result.images) {
        ASSERT_EQ(image.channels.size(), 64u);
        ASSERT_EQ(image.map.shape, (std::vector<int64_t>{28, 28}));
        double largest = 0.0, shareMagnitude = 0.0;
        for (const float v : image.map.values)
            largest = std::max(largest, std::abs(static_cast<double>(v)));
        for (const double s : image.shares)
            shareMagnitude += std::abs(s);
        EXPECT_NEAR(shareMagnitude, 1.0, 1e-6);
        for (size_t p = 0; p < image.map.values.size(); ++p) {
            double sum = 0.0;
            for (const auto& c : image.channels)
                sum += c.map.values[p];
            ASSERT_NEAR(sum, image.map.values[p], 1e-5 * largest) << image.image << " pixel " << p;
        }
        double layer = 0.0;
        for (const double r : image.relevance)
            layer += r;
        EXPECT_NEAR(layer, image.layerSum, 1e-9 * std::abs(layer) + 1e-12);
    }
    Engine engine(Model::load(demoModelPath()));
    const ConceptRelevanceResult direct = computeConceptRelevance(engine, request);
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(direct.images[i].target, result.images[i].target);
        EXPECT_EQ(direct.images[i].shares, result.images[i].shares);
    }
}

TEST(ConceptRelevance, TopChannelsAreTheMostRelevantAndACancelKeepsWhatFinished)
{
    ConceptRelevanceRequest request = demoRequest();
    request.channels.top = 5;
    request.memoryMb = 1;
    request.bytesPerSample = int64_t{1} << 20; // one image per batch
    Engine engine(Model::load(demoModelPath()));
    ConceptRelevanceReports reports;
    reports.progress = [](const Progress& p) { return p.done < 2; };
    const ConceptRelevanceResult result = computeConceptRelevance(engine, request, reports);
    EXPECT_TRUE(result.cancelled);
    ASSERT_EQ(result.images.size(), 2u);
    for (const auto& image : result.images) {
        ASSERT_EQ(image.channels.size(), 5u);
        std::vector<double> sorted = image.shares;
        std::sort(sorted.begin(), sorted.end(), std::greater<>());
        for (size_t k = 0; k < 5; ++k)
            EXPECT_EQ(image.channels[k].share, sorted[k]) << image.image << " rank " << k;
    }
}

// One loaded model, several requests in a row with other settings (composite, a rule override, the
// target, the channels): each equals a fresh engine's run of the same request bit for bit, and differs
// from the run before it (a cache keyed on less than the settings would hand back the earlier one).
TEST(ConceptRelevance, OtherSettingsOnOneLoadedModelEqualAFreshEngine)
{
    struct Settings {
        std::string composite;
        std::vector<std::string> rules;
        int64_t target;
        std::string channels;
    };
    const std::vector<Settings> runs{{"epsilon_plus_flat", {}, -1, "top:4"}, {"epsilon_alpha2_beta1", {}, -1, "top:4"},
        {"epsilon_alpha2_beta1", {"features.0=gamma:0.3"}, -1, "top:4"},
        {"epsilon_alpha2_beta1", {"features.0=gamma:0.3"}, 2, "top:4"},
        {"epsilon_alpha2_beta1", {"features.0=gamma:0.3"}, 2, "0,3,7"}};
    Engine shared(Model::load(demoModelPath()));
    std::vector<double> previous;
    for (size_t i = 0; i < runs.size(); ++i) {
        SCOPED_TRACE("run " + std::to_string(i) + ": " + runs[i].composite);
        ConceptRelevanceRequest request = demoRequest();
        request.composite = runs[i].composite;
        request.relevanceRules = runs[i].rules;
        request.targetClass = runs[i].target;
        request.channels = ChannelChoice::parse(runs[i].channels);
        const ConceptRelevanceResult got = computeConceptRelevance(shared, request);
        Engine fresh(Model::load(demoModelPath()));
        const ConceptRelevanceResult want = computeConceptRelevance(fresh, request);
        ASSERT_EQ(got.images.size(), want.images.size());
        std::vector<double> all;
        for (size_t k = 0; k < got.images.size(); ++k) {
            EXPECT_EQ(got.images[k].target, want.images[k].target);
            EXPECT_EQ(got.images[k].shares, want.images[k].shares);
            EXPECT_EQ(got.images[k].map.values, want.images[k].map.values);
            ASSERT_EQ(got.images[k].channels.size(), want.images[k].channels.size());
            for (size_t c = 0; c < got.images[k].channels.size(); ++c) {
                EXPECT_EQ(got.images[k].channels[c].channel, want.images[k].channels[c].channel);
                EXPECT_EQ(got.images[k].channels[c].map.values, want.images[k].channels[c].map.values);
                all.push_back(got.images[k].channels[c].mapSum);
            }
            for (const double v : got.images[k].shares) {
                EXPECT_FALSE(std::isnan(v));
                all.push_back(v);
            }
        }
        EXPECT_NE(all, previous) << "the settings changed nothing";
        previous = all;
    }
}

TEST(ConceptRelevance, BadRequestsSayWhatIsWrong)
{
    Engine engine(Model::load(demoModelPath()));
    ConceptRelevanceRequest request = demoRequest();
    request.channels.channels = {64};
    EXPECT_NE(errorOf([&] {
        computeConceptRelevance(engine, request);
    }).find("channel 64 is out of range: 'features.1' has 64 channels"),
        std::string::npos);
    request = demoRequest();
    request.layer = "classifier.0";
    request.referenceBy = "size";
    EXPECT_NE(errorOf([&] { computeConceptRelevance(engine, request); }).find("not 'size'"), std::string::npos);
    request = demoRequest();
    request.layer = "";
    EXPECT_NE(errorOf([&] { computeConceptRelevance(engine, request); }).find("needs a layer"), std::string::npos);
}

} // namespace
} // namespace torchscope::test
