// LRP's rewritten graph is cached on the loaded model by its settings: a second run with other settings
// (composite, a rule's γ or ε, an override) on the same Engine must equal a fresh Engine's run of those
// settings, bit for bit, and differ from the first (so that the comparison can fail).
#include "test_support.h"

#include "graph/engine.h"
#include "model/model.h"
#include "relevance/input_relevance.h"

#include <ATen/ATen.h>

namespace torchscope::test {
namespace {

RelevanceSettings settingsOf(const std::string& composite, const std::vector<std::string>& overrides)
{
    RelevanceSettings settings;
    settings.composite = composite;
    for (const auto& o : overrides)
        settings.overrides.push_back(RuleOverride::parse(o));
    return settings;
}

TEST(RelevanceOnOneLoadedModel, OtherSettingsOnTheSameEngineEqualAFreshEngine)
{
    at::manual_seed(7);
    const at::Tensor x = at::rand({2, 1, 28, 28}, at::TensorOptions().dtype(at::kFloat)).mul_(2).sub_(0.5);
    const std::vector<RelevanceSettings> runs{settingsOf("epsilon_plus_flat", {}),
        settingsOf("epsilon_alpha2_beta1", {}), settingsOf("epsilon", {"type:Linear=epsilon:0.25"}),
        settingsOf("epsilon", {"type:Linear=epsilon:2.5"}), settingsOf("epsilon_plus", {"type:Conv2d=gamma:0.1"}),
        settingsOf("epsilon_plus_flat", {})};
    auto model = Model::load(demoModelPath());
    Engine shared(model);
    at::Tensor previous;
    for (size_t i = 0; i < runs.size(); ++i) {
        SCOPED_TRACE("run " + std::to_string(i) + ": " + runs[i].cacheKey());
        const InputRelevance got = inputRelevance(shared, x, ScoreSource{}, 3, runs[i]);
        Engine fresh(Model::load(demoModelPath()));
        const InputRelevance want = inputRelevance(fresh, x, ScoreSource{}, 3, runs[i]);
        ASSERT_EQ(got.relevance.sizes(), x.sizes());
        EXPECT_TRUE(at::equal(got.relevance, want.relevance))
            << "largest difference " << (got.relevance - want.relevance).abs().max().item<float>();
        EXPECT_EQ(got.coverage.layers, want.coverage.layers);
        EXPECT_FALSE(at::isnan(got.relevance).any().item<bool>());
        if (previous.defined() && i + 1 < runs.size())
            EXPECT_FALSE(at::equal(got.relevance, previous)) << "the settings changed nothing";
        previous = got.relevance;
    }
}

} // namespace
} // namespace torchscope::test
