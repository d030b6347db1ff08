// Training SAEs on the demo model's layers from one pass over its images (sae/sae_training.h):
// the vectors a layer's output gives at each positions choice against a reshape written out, every
// layer trained and saved, a cancelled run resumed with the images it had left, register tokens
// told from patches, several epochs from the cache of the first (a run from a complete cache equal
// to one from the model, a run cancelled mid-epoch resumed), training and evaluation several times
// on one loaded model with other settings, and bad requests.
#include "test_support.h"

#include "common/error.h"
#include "export/read_tensors.h"
#include "graph/engine.h"
#include "model/model.h"
#include "model/model_setup.h"
#include "sae/sae_evaluation.h"
#include "sae/sae_training.h"
#include "sae/sparse_autoencoder.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <tuple>

namespace torchscope::test {
namespace {

const std::string DemoImages = test::sourceDir() + "/resources/demo/images";

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
    Engine engine(Model::load(demoModelPath()));
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

// An SAE as wide as the demo's features.1 ([N, 64, 7, 7]: 49 vectors of 64 an image), k 4, in steps
// of 32 vectors, over the demo's 10 images 2 at a time.
SaeTrainingRequest demoRequest(const Engine& engine)
{
    SaeTrainingRequest request;
    request.layers = {"features.1"};
    request.images = DemoImages;
    request.setup = storedSetup(engine.model()).value_or(ModelSetup{});
    request.expansion = 1;
    request.k = 4;
    request.batch = 32;
    request.imageBatch = 2;
    return request;
}

TEST(SaeTraining, ACancelledRunIsSavedAndResumesWithTheImagesLeft)
{
    Engine engine(Model::load(demoModelPath()));
    SaeTrainingRequest request = demoRequest(engine);
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

// training.json of a run's out folder.
nlohmann::json runState(const std::string& out)
{
    std::ifstream in(std::filesystem::path(out) / "training.json");
    return nlohmann::json::parse(in);
}

TEST(SaeTraining, SeveralSizesOfALayerTrainFromOnePass)
{
    Engine engine(Model::load(demoModelPath()));
    SaeTrainingRequest request = demoRequest(engine);
    request.layers = {"features.1", "features.0"};
    request.expansions = {1, 2};
    request.out = freshFolder("sae_sizes").string();
    const SaeTrainingResult result = trainSparseAutoencoders(engine, request);
    // features.1: [N, 64, 7, 7], at 1 and 2 times its 64 channels.
    ASSERT_EQ(result.layers.size(), 4u);
    const std::vector<std::tuple<std::string, std::string, int64_t>> expected{
        {"features.1", "features.1-x1", 64}, {"features.1", "features.1-x2", 128}};
    for (size_t i = 0; i < expected.size(); ++i) {
        const auto& [layer, name, latents] = expected[i];
        SCOPED_TRACE(name);
        EXPECT_EQ(result.layers[i].layer, layer);
        EXPECT_EQ(std::filesystem::path(result.layers[i].folder).filename().string(), name);
        EXPECT_EQ(result.layers[i].dSae, latents);
        // Every vector of the one pass, for each size.
        EXPECT_EQ(result.layers[i].steps.size(), 10u * 49u / 32u);
        SaeOrigin origin;
        const SparseAutoencoder sae = SparseAutoencoder::load(result.layers[i].folder, &origin);
        EXPECT_EQ(sae.config().dSae, latents);
        EXPECT_EQ(origin.layer, layer);
    }
    // features.0's two sizes, after features.1's: its channels once and twice.
    EXPECT_EQ(std::filesystem::path(result.layers[3].folder).filename().string(), "features.0-x2");
    EXPECT_GT(result.layers[2].dIn, 0);
    EXPECT_EQ(result.layers[2].dSae, result.layers[2].dIn);
    EXPECT_EQ(result.layers[3].dSae, 2 * result.layers[3].dIn);
    EXPECT_EQ(runState(request.out)["sizes"], nlohmann::json({"x1", "x2"}));
    // A layer asked twice is refused: its sizes are the way to several SAEs of it.
    SaeTrainingRequest twice = request;
    twice.layers = {"features.1", "features.1"};
    try {
        trainSparseAutoencoders(engine, twice);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("is asked twice"), std::string::npos) << e.what();
    }
    std::filesystem::remove_all(request.out);
}

// A cache's vectors of features.1, its shards in order.
at::Tensor cachedVectors(const std::string& cache)
{
    std::ifstream in(std::filesystem::path(cache) / "cache.json");
    const auto shards = nlohmann::json::parse(in)["shard_images"].size();
    std::vector<at::Tensor> parts;
    for (size_t j = 0; j < shards; ++j) {
        char name[32];
        std::snprintf(name, sizeof(name), "vectors_%05zu.npy", j);
        const auto path = std::filesystem::path(cache) / "features.1" / name;
        std::ifstream file(path, std::ios::binary);
        const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
        parts.push_back(decodeNpy(bytes, path.string()));
    }
    return at::cat(parts);
}

TEST(SaeTraining, SeveralEpochsReadTheCacheWhichEqualsTheModelsPassAndResumeMidEpoch)
{
    Engine engine(Model::load(demoModelPath()));
    SaeTrainingRequest request = demoRequest(engine);
    request.memoryBytes = 128 * 64 * 4; // shards of 64 KB at least: 3 batches of 2 images
    request.epochs = 3;
    request.cache = freshFolder("sae_cache").string();
    request.out = freshFolder("sae_epochs").string();
    const SaeTrainingResult all = trainSparseAutoencoders(engine, request);
    ASSERT_FALSE(all.cancelled);
    EXPECT_FALSE(all.fromCache);
    EXPECT_EQ(all.epochs, 3);
    // Every vector of every epoch, in whole batches: the buffer carries over from one epoch to the next.
    EXPECT_EQ(all.layers[0].steps.size(), 3u * 10u * 49u / 32u);
    EXPECT_EQ(SparseAutoencoder::resume(all.layers[0].folder).config().totalSteps, 3 * 10 * 49 / 32);
    std::ifstream cacheIn(std::filesystem::path(request.cache) / "cache.json");
    const nlohmann::json cache = nlohmann::json::parse(cacheIn);
    EXPECT_TRUE(cache["complete"].get<bool>());
    EXPECT_EQ(cache["shard_images"].get<std::vector<int64_t>>(), (std::vector<int64_t>{6, 4}));
    EXPECT_EQ(cache["vectors"].get<std::vector<int64_t>>(), std::vector<int64_t>{490});
    const nlohmann::json state = runState(request.out);
    EXPECT_EQ(state["epoch"], 3);
    EXPECT_TRUE(state["finished"].get<bool>());

    // A finished run resumed trains nothing more, though its cache could give another epoch.
    SaeTrainingRequest finishedRun = request;
    finishedRun.resume = true;
    const SaeTrainingResult nothing = trainSparseAutoencoders(engine, finishedRun);
    EXPECT_TRUE(nothing.layers[0].steps.empty());
    EXPECT_EQ(SparseAutoencoder::resume(all.layers[0].folder).steps(), 3 * 10 * 49 / 32);

    // A run from the complete cache runs no model and trains exactly as the run that wrote it.
    SaeTrainingRequest again = request;
    again.out = freshFolder("sae_epochs_again").string();
    const SaeTrainingResult cached = trainSparseAutoencoders(engine, again);
    EXPECT_TRUE(cached.fromCache);
    ASSERT_EQ(cached.layers[0].steps.size(), all.layers[0].steps.size());
    const auto a = SparseAutoencoder::load(all.layers[0].folder).weights();
    const auto b = SparseAutoencoder::load(cached.layers[0].folder).weights();
    for (const auto& [key, tensor] : a)
        EXPECT_TRUE(at::equal(tensor, b.at(key))) << key;

    // Cancelled in the second epoch after its first shard, then resumed: it goes on in that epoch.
    SaeTrainingRequest cut = request;
    cut.out = freshFolder("sae_epochs_cut").string();
    const SaeTrainingResult first = trainSparseAutoencoders(engine, cut, [](const Progress& p) {
        return p.done <= 10; // 10 images an epoch: the second's first shard ends the run
    });
    ASSERT_TRUE(first.cancelled);
    EXPECT_EQ(first.epochs, 2);
    const nlohmann::json stopped = runState(cut.out);
    EXPECT_EQ(stopped["epoch"], 2);
    EXPECT_EQ(stopped["shards_done"], 1);
    EXPECT_FALSE(stopped["finished"].get<bool>());
    // A resume with another cache (none complete of this run) is refused by what it lacks.
    SaeTrainingRequest wrong = cut;
    wrong.resume = true;
    wrong.cache = freshFolder("sae_cache_other").string();
    try {
        trainSparseAutoencoders(engine, wrong);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("does not hold a complete pass"), std::string::npos) << e.what();
    }
    cut.resume = true;
    const SaeTrainingResult second = trainSparseAutoencoders(engine, cut);
    EXPECT_FALSE(second.cancelled);
    EXPECT_EQ(second.images, 0) << "no forward pass after the first epoch";
    EXPECT_EQ(second.epochs, 3);
    EXPECT_TRUE(runState(cut.out)["finished"].get<bool>());
    const int64_t steps = SparseAutoencoder::resume(first.layers[0].folder).steps();
    EXPECT_GT(steps, static_cast<int64_t>(first.layers[0].steps.size()));
    EXPECT_LE(steps, 3 * 10 * 49 / 32);

    // Cancelled in the first epoch and resumed: the cache goes on from where the run stopped and
    // ends as the uncut run's, vector for vector.
    SaeTrainingRequest early = request;
    early.out = freshFolder("sae_epochs_early").string();
    early.cache = freshFolder("sae_cache_early").string();
    early.epochs = 1;
    const SaeTrainingResult stoppedEarly
        = trainSparseAutoencoders(engine, early, [](const Progress& p) { return p.done < 4; });
    ASSERT_TRUE(stoppedEarly.cancelled);
    early.resume = true;
    EXPECT_FALSE(trainSparseAutoencoders(engine, early).cancelled);
    EXPECT_TRUE(at::equal(cachedVectors(early.cache), cachedVectors(request.cache)));
    for (const auto& folder : {request.cache, request.out, again.out, cut.out, wrong.cache, early.out, early.cache})
        std::filesystem::remove_all(folder);
}

// Every figure of an evaluation, in one list.
std::vector<double> figuresOf(const SaeEvaluationResult& r)
{
    std::vector<double> out{double(r.images), double(r.vectors), r.fvu, r.meanSquaredError, r.l0, r.klSpliced, r.klZero,
        r.top1Spliced, r.top1Zero, r.lossClean, r.lossSpliced, r.lossZero, double(r.deadLatents)};
    out.insert(out.end(), r.fires.begin(), r.fires.end());
    return out;
}

// One loaded model, SAEs trained several times in a row with other settings (k, BatchTopK, the
// latents, the positions, the seed) and evaluated with other settings (images, batches, the
// positions): each SAE's weights and each evaluation's figures equal a fresh engine's for the same
// request, bit for bit, and each run differs from the one before it.
TEST(SaeOnOneLoadedModel, OtherSettingsOnTheSameEngineEqualAFreshEngine)
{
    Engine shared(Model::load(demoModelPath()));
    const SaeTrainingRequest base = demoRequest(shared);
    std::vector<SaeTrainingRequest> runs(4, base);
    runs[1].k = 2;
    runs[1].seed = 7;
    runs[2].batchTopK = true;
    runs[2].latents = 80;
    runs[3].positions = "sample:9";
    runs[3].batch = 16;
    std::vector<std::map<std::string, at::Tensor>> weights;
    std::vector<std::string> folders;
    for (size_t i = 0; i < runs.size(); ++i) {
        SCOPED_TRACE("training run " + std::to_string(i));
        SaeTrainingRequest a = runs[i];
        a.out = freshFolder("sae_shared_" + std::to_string(i)).string();
        SaeTrainingRequest b = runs[i];
        b.out = freshFolder("sae_fresh_" + std::to_string(i)).string();
        const SaeTrainingResult got = trainSparseAutoencoders(shared, a);
        Engine fresh(Model::load(demoModelPath()));
        const SaeTrainingResult want = trainSparseAutoencoders(fresh, b);
        ASSERT_EQ(got.layers.size(), 1u);
        ASSERT_EQ(want.layers.size(), 1u);
        EXPECT_EQ(got.layers[0].steps.size(), want.layers[0].steps.size());
        const auto mine = SparseAutoencoder::load(got.layers[0].folder).weights();
        const auto theirs = SparseAutoencoder::load(want.layers[0].folder).weights();
        ASSERT_EQ(mine.size(), theirs.size());
        for (const auto& [name, value] : mine) {
            ASSERT_TRUE(theirs.count(name)) << name;
            EXPECT_TRUE(at::equal(value, theirs.at(name))) << name;
        }
        if (!weights.empty() && weights.back().at("W_enc").sizes() == mine.at("W_enc").sizes())
            EXPECT_FALSE(at::equal(weights.back().at("W_enc"), mine.at("W_enc"))) << "the settings changed nothing";
        weights.push_back(mine);
        folders.push_back(got.layers[0].folder);
    }
    EXPECT_EQ(weights[2].at("W_enc").size(1), 80);
    EXPECT_TRUE(weights[2].count("threshold"));

    std::vector<SaeEvaluationRequest> evaluations(4);
    for (size_t i = 0; i < evaluations.size(); ++i) {
        evaluations[i].sae = folders[i];
        evaluations[i].images = DemoImages;
        evaluations[i].setup = base.setup;
    }
    evaluations[0].maxImages = 6;
    evaluations[1].imageBatch = 3;
    evaluations[2].denseAbove = 0.01;
    evaluations[3].positions = "all"; // not the SAE's sample:9
    std::vector<std::vector<double>> figures;
    for (size_t i = 0; i < evaluations.size(); ++i) {
        SCOPED_TRACE("evaluation " + std::to_string(i));
        const SaeEvaluationResult got = evaluateSparseAutoencoder(shared, evaluations[i]);
        Engine fresh(Model::load(demoModelPath()));
        const SaeEvaluationResult want = evaluateSparseAutoencoder(fresh, evaluations[i]);
        figures.push_back(figuresOf(got));
        EXPECT_EQ(figures.back(), figuresOf(want));
        EXPECT_EQ(got.denseLatents, want.denseLatents);
        for (const double f : figures.back())
            ASSERT_FALSE(std::isnan(f));
    }
    EXPECT_EQ(figures[0][0], 6.0);
    EXPECT_EQ(figures[3][1], 10.0 * 49.0); // every position of the maps, not 9 an image
    for (size_t i = 1; i < figures.size(); ++i)
        EXPECT_NE(figures[i], figures[i - 1]) << "evaluation " << i << ": the settings changed nothing";
}

TEST(SaeTraining, BadRequestsSayWhatIsWrong)
{
    Engine engine(Model::load(demoModelPath()));
    SaeTrainingRequest request;
    request.images = DemoImages;
    request.out = "/tmp/unused";
    EXPECT_THROW(trainSparseAutoencoders(engine, request), Error); // no layer
    request.layers = {"features.1"};
    request.positions = "corners";
    EXPECT_THROW(trainSparseAutoencoders(engine, request), Error);
    request.positions = "all";
    request.epochs = 2;
    try {
        trainSparseAutoencoders(engine, request);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("2 epochs read the vectors again from a cache"), std::string::npos)
            << e.what();
    }
    request.epochs = 1;
    request.images = "/nonexistent/folder";
    EXPECT_THROW(trainSparseAutoencoders(engine, request), Error);
}

} // namespace
} // namespace torchscope::test
