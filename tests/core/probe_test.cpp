// Linear probes: known separable data, error cases, and the demo model's own features.
#include "test_support.h"

#include "model/model_setup.h"

#include "imaging/image_decoder.h"
#include "imaging/image_folder.h"
#include "imaging/image_tensor.h"
#include "preprocess/preprocessing.h"
#include "probe/probe_dataset.h"
#include "probe/probe_folder.h"
#include "probe/probe_training.h"

#include <torch/torch.h>

namespace torchscope::test {
namespace {

TEST(Probe, SeparatesTwoBlobsPerfectly)
{
    torch::manual_seed(1);
    const at::Tensor a = torch::randn({60, 5}) + 3.0, b = torch::randn({60, 5}) - 3.0;
    const at::Tensor labels = at::cat({at::zeros({60}, at::kLong), at::ones({60}, at::kLong)});
    const auto probe = trainLinearProbe(at::cat({a, b}), labels);
    EXPECT_EQ(probe.classes, 2);
    EXPECT_EQ(probe.weight.sizes().vec(), (std::vector<int64_t>{1, 5})); // one logit: logistic regression
    EXPECT_DOUBLE_EQ(probe.validationAccuracy, 1.0);
    EXPECT_EQ(probe.confusion[0][1] + probe.confusion[1][0], 0);
    EXPECT_EQ(probe.confusion[0][0] + probe.confusion[1][1], 30); // 25 % of 120
    EXPECT_LT(probe.validationLoss[static_cast<size_t>(probe.bestEpoch)], probe.validationLoss.front());
}

TEST(Probe, SoftmaxForThreeClassesAndPoolingOfMaps)
{
    torch::manual_seed(2);
    std::vector<at::Tensor> maps, labels;
    for (int64_t c = 0; c < 3; ++c) {
        // Class c lights up channel c of a [4, 6, 6] map.
        at::Tensor m = torch::randn({40, 4, 6, 6}) * 0.5;
        m.select(1, c).add_(2.0);
        maps.push_back(m);
        labels.push_back(at::full({40}, c, at::kLong));
    }
    const auto probe = trainLinearProbe(at::cat(maps), at::cat(labels));
    EXPECT_EQ(probe.weight.sizes().vec(), (std::vector<int64_t>{3, 4}));
    EXPECT_GE(probe.validationAccuracy, 0.95);
    EXPECT_EQ(applyProbe(probe, at::cat(maps)).sizes().vec(), (std::vector<int64_t>{120, 3}));
}

TEST(Probe, RefusesWhatCannotBeTrained)
{
    EXPECT_NE(errorOf([] {
        trainLinearProbe(torch::randn({10, 3}), at::zeros({10}, at::kLong));
    }).find("at least two classes"),
        std::string::npos);
    const at::Tensor labels = at::tensor({0, 0, 0, 0, 0, 0, 0, 1}, at::kLong);
    EXPECT_NE(errorOf([&] {
        trainLinearProbe(torch::randn({8, 3}), labels);
    }).find("class 1 has 1 sample(s)"),
        std::string::npos);
    EXPECT_NE(errorOf([] {
        trainLinearProbe(torch::randn({8, 3}), at::zeros({7}, at::kLong));
    }).find("8 samples but 7"),
        std::string::npos);
}

TEST(Probe, DemoModelFeaturesTellFootwearFromShirtsFarAboveChance)
{
    auto model = Model::load(demoModelPath());
    const ModelSetup card = defaultSetup(*model);
    std::vector<std::string> paths;
    std::vector<int64_t> labels;
    for (const auto& [folder, label] : {std::pair{"ankle_boot", 1}, {"sneaker", 1}, {"t-shirt_top", 0}})
        for (const auto& path : listImages(fixture(std::string("labelled/") + folder))) {
            paths.push_back(path);
            labels.push_back(label);
        }
    Engine engine(model);
    Request request;
    request.grabs = {GrabSpec::parse("features.0")};
    request.truncateAt = "features.0"; // the probe's layer; the rest of the network is not computed
    const at::Tensor activations
        = engine.run(request, {loadImageBatch(paths, card.preprocessing)}).tensor("features.0");
    ProbeTrainingConfig config;
    config.seed = 7;
    const auto probe = trainLinearProbe(activations, at::tensor(labels, at::kLong), config);
    std::cout << "  footwear probe on features.0: train " << probe.trainAccuracy << ", validation "
              << probe.validationAccuracy << " (majority class: " << 24.0 / 36 << ")\n";
    EXPECT_GE(probe.validationAccuracy, 0.85);
}

TEST(Probe, TrainedFromAnImageFolderSeparatesFootwearOnHeldOutImages)
{
    // probe/{footwear,rest}: 60 Fashion-MNIST test images each, decoded from PNG files.
    auto model = Model::load(demoModelPath());
    const ModelSetup card = defaultSetup(*model);
    ProbeSamples samples = folderSamples(ImageFolder::scan(fixture("probe"), card.labels), card.preprocessing, 16, 2);
    EXPECT_EQ(samples.classNames, (std::vector<std::string>{"footwear", "rest"}));
    Engine engine(model);
    int64_t lastDone = 0;
    const ProbeDataset dataset
        = collectProbeDataset(engine, {"features.1"}, ProbePooling::Average, samples, nullptr, [&](const Progress& p) {
              EXPECT_EQ(p.total, 120);
              EXPECT_EQ(p.stage, "activations");
              lastDone = p.done;
              return true;
          });
    EXPECT_EQ(lastDone, 120);
    EXPECT_EQ(dataset.labels.sum().item<int64_t>(), 60); // "rest" is class 1
    ProbeTrainingConfig config;
    config.seed = 11;
    const auto probe = trainLinearProbe(dataset.features.at("features.1"), dataset.labels, config);
    std::cout << "  footwear vs. rest on features.1: validation " << probe.validationAccuracy << " (chance 0.5)\n";
    EXPECT_GE(probe.validationAccuracy, 0.9);
    EXPECT_EQ(probe.confusion[0][0] + probe.confusion[0][1] + probe.confusion[1][0] + probe.confusion[1][1], 30);
}

TEST(Probe, AFolderWithoutClassesIsRefused)
{
    const std::string message
        = errorOf([] { folderSamples(ImageFolder::scan(fixture("images")), Preprocessing::none(), 4, 1); });
    EXPECT_NE(message.find("one subfolder per class"), std::string::npos) << message;
}

} // namespace
} // namespace torchscope::test
