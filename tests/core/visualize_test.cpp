// Activation maximisation: the C++ path against the eager reference (tests/fixtures/
// visualize_reference.py), the demo data set, random noise and a trained probe.
#include "test_support.h"

#include "export/pt_export.h"
#include "model/model_setup.h"
#include "probe/linear_probe.h"
#include "probe/probe_training.h"
#include "visualize/activation_maximization.h"
#include "visualize/unit_objective.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace torchscope::test {
namespace {

using nlohmann::json;

json visualizeCases()
{
    std::ifstream file(fixture("visualize_cases.json"));
    return json::parse(file);
}

std::shared_ptr<Model> demoModelOnCpu()
{
    LoadOptions options;
    options.device = "cpu";
    return Model::load(demoModelPath(), options);
}

Objective objectiveFrom(const json& o)
{
    Objective objective;
    const std::string kind = o.at("kind");
    objective.kind = kind == "channel" ? ObjectiveKind::Channel
        : kind == "neuron"             ? ObjectiveKind::Neuron
                                       : ObjectiveKind::Direction;
    objective.channel = o.at("channel");
    objective.y = o.at("y");
    objective.x = o.at("x");
    objective.negative = o.at("negative");
    if (o.contains("direction"))
        objective.direction = o.at("direction").get<std::vector<double>>();
    return objective;
}

VisualizeConfig configFrom(const json& c)
{
    VisualizeConfig config;
    config.layer = c.at("layer");
    config.steps = c.at("steps");
    config.size = c.at("size");
    config.parameterization = parseParameterization(c.at("param"));
    config.decorrelate = c.at("decorrelate");
    config.learningRate = c.at("learning_rate");
    config.diversity = c.at("diversity");
    config.seed = c.at("seed");
    const json& t = c.at("transforms");
    config.transforms = {t.at("jitter"), t.at("scale_min"), t.at("scale_max"), t.at("rotate"), t.at("enabled")};
    for (const auto& o : c.at("objectives"))
        config.objectives.push_back(objectiveFrom(o));
    return config;
}

at::Tensor trajectoryTensor(const std::vector<std::vector<double>>& steps)
{
    std::vector<at::Tensor> rows;
    for (const auto& step : steps)
        rows.push_back(at::tensor(step, at::kDouble));
    return at::stack(rows);
}

VisualizeConfig demoChannels(const std::vector<int64_t>& channels, int steps)
{
    VisualizeConfig config;
    config.layer = "features.2.bn";
    config.steps = steps;
    for (int64_t c : channels)
        config.objectives.push_back({ObjectiveKind::Channel, c});
    return config;
}

TEST(Visualize, FollowsTheEagerReferenceStepByStep)
{
    const json cases = visualizeCases().at("cases");
    ASSERT_EQ(cases.size(), 4u);
    for (const auto& c : cases) {
        SCOPED_TRACE(c.at("name").get<std::string>());
        const std::string model = c.at("model");
        const auto loaded = model == "demo" ? demoModelOnCpu() : loadModel(model);
        Engine engine(loaded);
        const VisualizeResult result = visualize(engine, defaultSetup(*loaded).preprocessing, configFrom(c));
        std::vector<std::vector<double>> expected = c.at("trajectory");
        ASSERT_EQ(result.steps, static_cast<int>(expected.size()));
        EXPECT_TRUE(tensorsCloseRelative(
            "objectives per step", trajectoryTensor(result.trajectory), trajectoryTensor(expected), 1e-4));
        // The objective moved: the comparison is of an optimisation, not of constants.
        EXPECT_GT(std::abs(expected.back()[0] - expected.front()[0]), 1e-3);
    }
}

TEST(Visualize, IsDeterministicForASeed)
{
    const auto model = demoModelOnCpu();
    Engine engine(model);
    const Preprocessing preprocessing = defaultSetup(*model).preprocessing;
    VisualizeConfig config = demoChannels({5}, 10);
    const VisualizeResult a = visualize(engine, preprocessing, config);
    const VisualizeResult b = visualize(engine, preprocessing, config);
    EXPECT_TRUE(at::equal(a.images, b.images));
    EXPECT_EQ(a.trajectory, b.trajectory);
    config.seed = 1;
    EXPECT_FALSE(at::equal(visualize(engine, preprocessing, config).images, a.images));
}

TEST(Visualize, ExcitesItsChannelMoreThanEveryDemoImageAndNoise)
{
    const json dataset = visualizeCases().at("demo_dataset");
    ASSERT_EQ(dataset.at("layer"), "features.2.bn");
    const std::vector<double> datasetMax = dataset.at("max");
    const auto model = demoModelOnCpu();
    Engine engine(model);
    const Preprocessing preprocessing = defaultSetup(*model).preprocessing;
    const std::vector<int64_t> channels = {0, 17, 64, 101};
    const VisualizeConfig config = demoChannels(channels, 128);
    const VisualizeResult result = visualize(engine, preprocessing, config);
    ASSERT_EQ(result.images.sizes().vec(), (std::vector<int64_t>{4, 1, 28, 28}));

    at::manual_seed(0);
    const at::Tensor noise = at::rand({64, 1, 28, 28});
    for (size_t i = 0; i < channels.size(); ++i) {
        const auto channel = static_cast<size_t>(channels[i]);
        VisualizeConfig one = demoChannels(std::vector<int64_t>(64, channels[i]), 1);
        const std::vector<double> noiseValues = objectivesOf(engine, preprocessing, one, noise);
        const double noiseMax = *std::max_element(noiseValues.begin(), noiseValues.end());
        std::cout << "channel " << channel << ": optimised " << result.objectives[i] << ", best of "
                  << dataset.at("images") << " test images " << datasetMax[channel] << ", best of 64 noise images "
                  << noiseMax << '\n';
        EXPECT_GT(result.objectives[i], datasetMax[channel]);
        // A wide margin over noise: at least twice as far above zero as the best noise image.
        EXPECT_GT(result.objectives[i], 2.0 * std::max(noiseMax, 0.1));
    }
}

TEST(Visualize, AProbesDirectionRaisesItsScore)
{
    const auto model = demoModelOnCpu();
    Engine engine(model);
    const Preprocessing preprocessing = defaultSetup(*model).preprocessing;
    const auto data = readTorchSaveFile(fixture("labelled_inputs.pt")).toGenericDict();
    const at::Tensor samples = data.at("samples").toTensor();
    at::Tensor labels = data.at("labels").toTensor(); // classes 0, 7, 9 of the demo
    labels = (labels == 7).to(at::kLong) + 2 * (labels == 9).to(at::kLong);

    Request request;
    request.grabOutput("features.2.bn");
    const at::Tensor activations = engine.run(request, {samples}).tensor("features.2.bn");
    LinearProbe probe{"features.2.bn", ProbePooling::Average, {"t-shirt", "sneaker", "ankle boot"}};
    probe.training = trainLinearProbe(probeFeatures(activations), labels);
    const std::string path = (freshFolder("visualize_probe") / "probe.pt").string();
    saveProbeModule(path, probe);

    VisualizeConfig config;
    config.layer = "features.2.bn";
    config.steps = 64;
    Objective objective{ObjectiveKind::Probe, 1};
    objective.probePath = path;
    config.objectives = {objective};
    const VisualizeResult result = visualize(engine, preprocessing, config);
    std::filesystem::remove(path);

    const at::Tensor scores = applyProbe(probe.training, probeFeatures(activations)).select(1, 1);
    const double best = scores.max().item<double>();
    std::cout << "sneaker score: start " << result.trajectory.front()[0] << ", optimised " << result.objectives[0]
              << ", best of the 36 images " << best << '\n';
    EXPECT_GT(result.objectives[0], result.trajectory.front()[0] + 1.0);
    EXPECT_GT(result.objectives[0], best);
}

TEST(Visualize, CancelReturnsTheImageSoFar)
{
    const auto model = demoModelOnCpu();
    Engine engine(model);
    const VisualizeResult result = visualize(engine, defaultSetup(*model).preprocessing, demoChannels({3, 4}, 100),
        [](const Progress& p) { return p.done < 5; });
    EXPECT_TRUE(result.cancelled);
    EXPECT_EQ(result.steps, 5);
    EXPECT_EQ(result.trajectory.size(), 5u);
    ASSERT_EQ(result.images.sizes().vec(), (std::vector<int64_t>{2, 1, 28, 28}));
    EXPECT_TRUE(at::isfinite(result.images).all().item<bool>());
    EXPECT_EQ(result.objectives.size(), 2u);
}

TEST(Visualize, RefusesWhatDoesNotFit)
{
    const auto model = demoModelOnCpu();
    Engine engine(model);
    const Preprocessing preprocessing = defaultSetup(*model).preprocessing;
    EXPECT_NE(errorOf([&] {
        visualize(engine, preprocessing, demoChannels({128}, 2));
    }).find("channel 128 is not in 'features.2.bn', which has 128 channels"),
        std::string::npos);
    VisualizeConfig config = demoChannels({0}, 2);
    config.layer = "features.9";
    EXPECT_NE(errorOf([&] { visualize(engine, preprocessing, config); }).find("features.9"), std::string::npos);
    config = demoChannels({0}, 0);
    EXPECT_NE(errorOf([&] { visualize(engine, preprocessing, config); }).find("steps must be 1 to 100000, not 0"),
        std::string::npos);
    config = demoChannels({0}, 2);
    config.objectives[0] = {ObjectiveKind::Direction, 0};
    config.objectives[0].direction = {1.0, 2.0};
    EXPECT_NE(errorOf([&] {
        visualize(engine, preprocessing, config);
    }).find("the direction has 2 values, but 'features.2.bn' has 128 channels"),
        std::string::npos);
    config = demoChannels({0}, 2);
    config.objectives[0] = {ObjectiveKind::Neuron, 0, 7, 0};
    EXPECT_NE(errorOf([&] { visualize(engine, preprocessing, config); }).find("outside"), std::string::npos);
    EXPECT_NE(errorOf([&] {
        visualize(engine, Preprocessing::none(), demoChannels({0}, 2));
    }).find("does not fix its input size"),
        std::string::npos);
}

TEST(Visualize, DiversityPushesApartOnlyImagesOfOneObjective)
{
    Objective a{ObjectiveKind::Channel, 1}, b{ObjectiveKind::Channel, 2}, minusB = b;
    minusB.negative = true;
    Objective direction{ObjectiveKind::Direction, 0}, otherDirection = direction;
    direction.direction = {1.0, 0.0};
    otherDirection.direction = {0.0, 1.0};
    const std::vector<std::vector<int64_t>> groups
        = diverseGroups({a, a, b, a, minusB, b, direction, otherDirection, minusB});
    const std::vector<std::vector<int64_t>> expected{{0, 1, 3}, {2, 5}, {4, 8}};
    EXPECT_EQ(groups, expected);
    EXPECT_TRUE(diverseGroups({a, b, minusB}).empty());

    // With none to push apart, a diversity weight is said to do nothing.
    const auto model = demoModelOnCpu();
    Engine engine(model);
    VisualizeConfig config = demoChannels({0, 1}, 2);
    config.diversity = 1.0;
    const VisualizeResult result = visualize(engine, defaultSetup(*model).preprocessing, config);
    ASSERT_EQ(result.warnings.size(), 1u);
    EXPECT_NE(result.warnings[0].find("does nothing"), std::string::npos);
}

} // namespace
} // namespace torchscope::test
