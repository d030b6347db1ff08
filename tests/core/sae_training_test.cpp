// Training SAEs on the demo model's layers from one pass over its images (sae/sae_training.h):
// the vectors a layer's output gives at each positions choice against a reshape written out, every
// layer trained and saved, a cancelled run resumed with the images it had left, register tokens
// told from patches, and bad requests.
#include "test_support.h"

#include "common/error.h"
#include "graph/engine.h"
#include "model/model.h"
#include "model/model_setup.h"
#include "sae/sae_training.h"
#include "sae/sparse_autoencoder.h"

#include <ATen/ATen.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>

namespace torchscope::test {
namespace {

const std::string Demo = std::string(TORCHSCOPE_SOURCE_DIR) + "/resources/demo/fashion_cnn.pt";
const std::string DemoImages = std::string(TORCHSCOPE_SOURCE_DIR) + "/resources/demo/images";

TEST(SaeVectors, EveryPositionOfAMapIsOneVector)
{
    const at::Tensor map = at::randn({2, 3, 4, 5}); // 3 channels, height ≠ width, batch 2
    const at::Tensor vectors = activationVectors(map, "all", 0);
    ASSERT_EQ(vectors.sizes(), (std::vector<int64_t>{40, 3}));
    // Image 1, row 2, column 3 is vector 20 + 2 · 5 + 3.
    EXPECT_TRUE(at::equal(vectors[20 + 2 * 5 + 3], map[1].select(1, 2).select(1, 3)));
    EXPECT_EQ(activationVectors(map, "sample:4", 1).size(0), 8);
    EXPECT_THROW(activationVectors(map, "class", 0), Error);
}

TEST(SaeVectors, TokensWithAClassTokenAndAGrid)
{
    const at::Tensor tokens = at::randn({2, 1 + 3 * 3, 6});
    EXPECT_TRUE(at::equal(activationVectors(tokens, "class", 0), tokens.select(1, 0)));
    const at::Tensor patches = activationVectors(tokens, "patches", 0);
    ASSERT_EQ(patches.sizes(), (std::vector<int64_t>{18, 6}));
    EXPECT_TRUE(at::equal(patches[9], tokens[1][1]));
    EXPECT_EQ(activationVectors(tokens, "all", 0).size(0), 20);
    EXPECT_THROW(activationVectors(at::randn({2, 7, 6}), "class", 0), Error); // 6 is no square grid
    EXPECT_THROW(activationVectors(at::randn({2, 4}), "sample:2", 0), Error);
    EXPECT_THROW(activationVectors(tokens, "sample:0", 0), Error);
}

TEST(SaeVectors, RegisterTokensAreNeitherTheClassTokenNorPatches)
{
    // A class token and two registers before a 5 × 7 grid (tests/fixtures/color_model.py's RegisterVit).
    const at::Tensor tokens = at::randn({2, 3 + 35, 4});
    const at::Tensor patches = activationVectors(tokens, "patches", 0, 3);
    ASSERT_EQ(patches.sizes(), (std::vector<int64_t>{70, 4}));
    EXPECT_TRUE(at::equal(patches[35], tokens[1][3]));
    EXPECT_TRUE(at::equal(activationVectors(tokens, "class", 0, 3), tokens.select(1, 0)));
    EXPECT_EQ(saeTokenRange(38, "patches", 3), (std::pair<int64_t, int64_t>{3, 35}));
    EXPECT_EQ(saeTokenRange(38, "all", 3), (std::pair<int64_t, int64_t>{0, 38}));
    EXPECT_THROW(saeTokenRange(35, "class", 0), Error); // no token before the grid
    // The layout comes from the model's patch embedding and the image's height × width.
    const auto vit = loadModel("register_vit.pt");
    EXPECT_EQ(saePrefixTokens(*vit, tokens, 40, 56), 3);
    EXPECT_EQ(saePrefixTokens(*vit, at::randn({2, 3, 4, 5}), 40, 56), -1);
}

TEST(SaeTraining, TwoLayersFromOnePassAreTrainedAndSaved)
{
    Engine engine(Model::load(Demo));
    SaeTrainingRequest request;
    request.layers = {"features.1", "classifier.0"};
    request.images = DemoImages;
    request.setup = storedSetup(engine.model()).value_or(ModelSetup{});
    request.expansion = 2;
    request.k = 4;
    request.batch = 5; // classifier.0 gives one vector an image: 10
    request.learningRate = 1e-3;
    request.out = (std::filesystem::temp_directory_path() / "torchscope_sae_training_test").string();
    std::filesystem::remove_all(request.out);
    int reports = 0;
    const SaeTrainingResult result = trainSparseAutoencoders(engine, request, [&](const Progress& p) {
        ++reports;
        EXPECT_EQ(p.stage, "training");
        return true;
    });
    EXPECT_FALSE(result.cancelled);
    EXPECT_EQ(result.images, 10);
    EXPECT_GT(reports, 0);
    ASSERT_EQ(result.layers.size(), 2u);
    for (const auto& layer : result.layers) {
        EXPECT_FALSE(layer.steps.empty()) << layer.layer;
        EXPECT_EQ(layer.dSae, 2 * layer.dIn) << layer.layer;
        ASSERT_FALSE(layer.folder.empty()) << layer.layer;
        SaeOrigin origin;
        const SparseAutoencoder back = SparseAutoencoder::load(layer.folder, &origin);
        EXPECT_EQ(origin.layer, layer.layer);
        EXPECT_EQ(back.config().dIn, layer.dIn);
    }
    std::filesystem::remove_all(request.out);
}

TEST(SaeTraining, ACancelledRunIsSavedAndResumesWithTheImagesLeft)
{
    Engine engine(Model::load(Demo));
    SaeTrainingRequest request;
    request.layers = {"features.1"};
    request.images = DemoImages;
    request.setup = storedSetup(engine.model()).value_or(ModelSetup{});
    request.expansion = 1;
    request.k = 4;
    request.batch = 32; // features.1 gives [N, 64, 7, 7]: 49 vectors of 64 an image
    request.imageBatch = 2;
    request.memoryBytes = 128 * 64 * 4; // a buffer of 128 vectors: 2 steps each time it fills
    request.out = freshFolder("sae_resume").string();
    {
        // Uncancelled, every vector is trained on but the last part-batch: each time the buffer fills,
        // its half is trained and its other half kept; at the end the rest.
        SaeTrainingRequest whole = request;
        whole.out = freshFolder("sae_whole").string();
        const SaeTrainingResult all = trainSparseAutoencoders(engine, whole);
        EXPECT_EQ(all.layers[0].steps.size(), 10u * 49u / 32u);
        // The run's length is known from the first batch, for the learning rate's decay.
        EXPECT_EQ(SparseAutoencoder::resume(all.layers[0].folder).config().totalSteps, 10 * 49 / 32);
        std::filesystem::remove_all(whole.out);
    }
    const SaeTrainingResult first = trainSparseAutoencoders(engine, request, [](const Progress& p) {
        return p.done < 4; // cancelled after the second batch
    });
    ASSERT_TRUE(first.cancelled);
    EXPECT_EQ(first.images, 4);
    ASSERT_FALSE(first.layers[0].steps.empty());
    const int64_t stepsBefore = static_cast<int64_t>(first.layers[0].steps.size());
    const std::string folder = first.layers[0].folder;
    EXPECT_EQ(SparseAutoencoder::resume(folder).steps(), stepsBefore);
    EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(folder) / "sae_weights.safetensors"));

    // Asked otherwise, it is refused by what differs.
    SaeTrainingRequest other = request;
    other.resume = true;
    other.positions = "sample:8";
    try {
        trainSparseAutoencoders(engine, other);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("positions"), std::string::npos) << e.what();
    }

    request.resume = true;
    const SaeTrainingResult second = trainSparseAutoencoders(engine, request);
    EXPECT_FALSE(second.cancelled);
    EXPECT_EQ(second.imagesBefore, 4);
    EXPECT_EQ(second.images, 6); // the folder's 10 images, each once
    const SparseAutoencoder resumed = SparseAutoencoder::resume(folder);
    EXPECT_EQ(resumed.steps(), stepsBefore + static_cast<int64_t>(second.layers[0].steps.size()));
    // The log holds every step of both calls, one line each after its header.
    std::ifstream log(std::filesystem::path(folder) / "training_log.csv");
    std::string line;
    int64_t lines = 0;
    while (std::getline(log, line))
        ++lines;
    EXPECT_EQ(lines, 1 + resumed.steps());
    std::filesystem::remove_all(request.out);
}

TEST(SaeTraining, BadRequestsSayWhatIsWrong)
{
    Engine engine(Model::load(Demo));
    SaeTrainingRequest request;
    request.images = DemoImages;
    request.out = "/tmp/unused";
    EXPECT_THROW(trainSparseAutoencoders(engine, request), Error); // no layer
    request.layers = {"features.1"};
    request.positions = "corners";
    EXPECT_THROW(trainSparseAutoencoders(engine, request), Error);
    request.positions = "all";
    request.images = "/nonexistent/folder";
    EXPECT_THROW(trainSparseAutoencoders(engine, request), Error);
}

} // namespace
} // namespace torchscope::test
