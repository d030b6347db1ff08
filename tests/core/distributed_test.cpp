// A recording split over ranks: torchrun's variables, the split of batches, recorders merged from
// their serialised state against one recorder over everything, and ranks of one process (threads)
// exchanging through c10d's Gloo; an SAE trained by two ranks on the halves of every step against
// one process on the whole steps. The CLI's jobs of several processes: tests/cli/test_job.py.
#include "test_support.h"

#include "common/error.h"
#include "distributed/cluster.h"
#include "distributed/cluster_environment.h"
#include "distributed/lockstep.h"
#include "model/model_setup.h"
#include "record/batch_run.h"
#include "record/labelled_samples.h"
#include "record/recorder.h"
#include "sae/sparse_autoencoder.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <future>
#include <map>
#include <set>
#include <thread>
#include <tuple>

namespace torchscope::test {
namespace {

EnvironmentLookup variables(std::map<std::string, std::string> values)
{
    auto kept = std::make_shared<std::map<std::string, std::string>>(std::move(values));
    return [kept](const char* name) -> const char* {
        const auto it = kept->find(name);
        return it == kept->end() ? nullptr : it->second.c_str();
    };
}

TEST(ClusterEnvironment, ReadsTorchrunsVariables)
{
    EXPECT_FALSE(clusterEnvironment(variables({})).has_value());
    const auto job = clusterEnvironment(variables(
        {{"WORLD_SIZE", "3"}, {"RANK", "2"}, {"LOCAL_RANK", "0"}, {"MASTER_ADDR", "node1"}, {"MASTER_PORT", "29400"}}));
    ASSERT_TRUE(job.has_value());
    EXPECT_EQ(job->worldSize, 3);
    EXPECT_EQ(job->rank, 2);
    EXPECT_EQ(job->localRank, 0);
    EXPECT_EQ(job->masterAddress, "node1");
    EXPECT_EQ(job->masterPort, 29400);
    EXPECT_EQ(job->describe(), "rank 2 of 3 (local 0), rendezvous node1:29400");
    EXPECT_FALSE(job->agentStore);
    // Under torchrun the agent serves the store; each restart has keys of its own.
    const auto underTorchrun = clusterEnvironment(variables({{"WORLD_SIZE", "2"}, {"RANK", "0"}, {"MASTER_ADDR", "h"},
        {"MASTER_PORT", "29500"}, {"TORCHELASTIC_USE_AGENT_STORE", "True"}, {"TORCHELASTIC_RESTART_COUNT", "1"}}));
    EXPECT_TRUE(underTorchrun->agentStore);
    EXPECT_EQ(underTorchrun->restartCount, 1);
    // A world of one needs no rendezvous.
    EXPECT_EQ(clusterEnvironment(variables({{"WORLD_SIZE", "1"}, {"RANK", "0"}}))->worldSize, 1);
}

TEST(ClusterEnvironment, ExplainsWhatIsWrong)
{
    const std::map<std::string, std::string> good{
        {"WORLD_SIZE", "2"}, {"RANK", "1"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "29500"}};
    const std::vector<std::pair<std::pair<std::string, std::string>, std::string>> cases{
        {{"RANK", "2"}, "RANK='2' is not a whole number from 0 to 1"},
        {{"RANK", "-1"}, "RANK='-1'"},
        {{"RANK", ""}, "RANK is not set, but WORLD_SIZE is"},
        {{"WORLD_SIZE", "2x"}, "WORLD_SIZE='2x'"},
        {{"MASTER_PORT", "0"}, "MASTER_PORT='0' is not a whole number from 1 to 65535"},
        {{"MASTER_ADDR", ""}, "MASTER_ADDR is not set"},
    };
    for (const auto& [change, message] : cases) {
        auto values = good;
        values[change.first] = change.second;
        EXPECT_NE(errorOf([&] { clusterEnvironment(variables(values)); }).find(message), std::string::npos)
            << change.first << "=" << change.second << ": " << errorOf([&] { clusterEnvironment(variables(values)); });
    }
}

TEST(Shard, EveryBatchGoesToExactlyOneRank)
{
    for (int ranks = 1; ranks <= 5; ++ranks)
        for (int64_t batches = 0; batches <= 12; ++batches) {
            std::multiset<int64_t> seen;
            for (int r = 0; r < ranks; ++r) {
                const Shard shard{r, ranks};
                for (int64_t local = 0; local < shard.batchesOf(batches); ++local)
                    seen.insert(shard.globalBatch(local));
            }
            std::multiset<int64_t> all;
            for (int64_t b = 0; b < batches; ++b)
                all.insert(b);
            EXPECT_EQ(seen, all) << ranks << " ranks, " << batches << " batches";
        }
}

struct Samples {
    at::Tensor rows;
    std::vector<int64_t> labels;
};

Samples labelledSamples()
{
    const LabelledSamples saved = readLabelledSamples(fixture("labelled_inputs.pt"));
    return {saved.samples, saved.labels};
}

std::unique_ptr<Recorder> recordShard(
    Engine& engine, const RecorderConfig& config, const Samples& samples, const Shard& shard, int batch)
{
    auto recorder = std::make_unique<Recorder>(config);
    recordBatches(engine, *recorder, tensorBatches(samples.rows, samples.labels, batch, shard));
    return recorder;
}

void expectSameResults(const Recorder& merged, const Recorder& whole)
{
    const NamedValues got = merged.results(), want = whole.results();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
        ASSERT_EQ(got[i].first, want[i].first);
        const at::Tensor a = got[i].second.toTensor(), b = want[i].second.toTensor();
        ASSERT_EQ(a.sizes(), b.sizes()) << want[i].first;
        if (b.is_floating_point()) {
            ASSERT_FALSE(a.isnan().any().item<bool>()) << want[i].first;
            const double relative
                = ((a.to(at::kDouble) - b.to(at::kDouble)).abs() / b.to(at::kDouble).abs().clamp_min(1e-12))
                      .max()
                      .item<double>();
            EXPECT_LE(relative, 1e-9) << want[i].first;
        } else {
            EXPECT_TRUE(at::equal(a, b)) << want[i].first;
        }
    }
}

TEST(RecorderMerge, ThreeShardsEqualOneRecorderForEveryReduction)
{
    auto model = Model::load(demoModelPath());
    Engine engine(model);
    const Samples samples = labelledSamples();
    for (const std::string reduction : {"stats", "none", "sum", "mean", "max", "min"}) {
        SCOPED_TRACE(reduction);
        RecorderConfig config;
        config.grabs = {GrabSpec::parse("features.1"), GrabSpec::parse("classifier.2")};
        config.reduction = parseReduction(reduction);
        config.topK = 5;
        config.histogramRange = std::make_pair(-4.0, 9.0); // ranks agree on it (the CLI's job does this step)
        const auto whole = recordShard(engine, config, samples, {}, 5);
        auto merged = recordShard(engine, config, samples, {0, 3}, 5);
        for (int r : {2, 1}) // any order: the result does not depend on it
            merged->merge(recordShard(engine, config, samples, {r, 3}, 5)->serialized());
        expectSameResults(*merged, *whole);
    }
}

TEST(RecorderMerge, ARangeFromTheEarliestBatchIsTheOneProcessesRange)
{
    auto model = Model::load(demoModelPath());
    Engine engine(model);
    const Samples samples = labelledSamples();
    RecorderConfig config;
    config.grabs = {GrabSpec::parse("features.2")};
    const auto whole = recordShard(engine, config, samples, {}, 4);
    // The first batch is rank 0's: its candidate is the range one process takes.
    Recorder first(config);
    const Request request = recordingRequest(engine, config);
    const RunResult run = engine.run(request, forwardInputsFromBatch(engine.model(), samples.rows.slice(0, 0, 4)));
    const auto candidates = first.histogramRangeCandidates(run, at::ones({4}, at::kBool));
    ASSERT_EQ(candidates.count("features.2"), 1u);
    std::vector<std::unique_ptr<Recorder>> shards;
    for (int r = 0; r < 2; ++r) {
        auto recorder = std::make_unique<Recorder>(config);
        recorder->fixHistogramRange(
            "features.2", candidates.at("features.2").first, candidates.at("features.2").second);
        recordBatches(engine, *recorder, tensorBatches(samples.rows, samples.labels, 4, {r, 2}));
        shards.push_back(std::move(recorder));
    }
    shards[0]->merge(shards[1]->serialized());
    expectSameResults(*shards[0], *whole);

    // Without agreeing, rank 1 takes its own first batch's range: merging is refused, not guessed.
    Recorder alone(config);
    recordBatches(engine, alone, tensorBatches(samples.rows, samples.labels, 4, {1, 2}));
    Recorder zero(config);
    recordBatches(engine, zero, tensorBatches(samples.rows, samples.labels, 4, {0, 2}));
    EXPECT_NE(errorOf([&] { zero.merge(alone.serialized()); }).find("the counts cannot be added"), std::string::npos);
}

TEST(RecorderMerge, TiesInTheTopKGoToTheLowerSampleWhateverTheOrder)
{
    // Constant rows tie everywhere: one process and shards merged in any order pick the same,
    // lowest samples.
    auto model = Model::load(demoModelPath());
    Engine engine(model);
    const Samples same{at::full({12, 1, 28, 28}, 0.5), {}};
    RecorderConfig config;
    config.grabs = {GrabSpec::parse("features.1")};
    config.topK = 4;
    config.histogramRange = std::make_pair(-4.0, 9.0);
    const auto whole = recordShard(engine, config, same, {}, 3);
    const at::Tensor top = whole->results().back().second.toTensor(); // top_samples
    ASSERT_EQ(whole->results().back().first, "features.1:top_samples");
    EXPECT_TRUE(at::equal(top.select(1, 0), at::arange(4, at::kLong)));
    // Rank 2 holds samples 6..8, rank 0 samples 0..2 and 9..11: merged last to first, the later
    // samples arrive first and must still lose every tie.
    for (const std::vector<int>& order : {std::vector<int>{0, 1, 2}, {2, 1, 0}, {1, 2, 0}}) {
        SCOPED_TRACE(::testing::PrintToString(order));
        auto merged = recordShard(engine, config, same, {order[0], 3}, 3);
        for (size_t i = 1; i < order.size(); ++i)
            merged->merge(recordShard(engine, config, same, {order[i], 3}, 3)->serialized());
        expectSameResults(*merged, *whole);
    }
}

// A TCPStore on a port the OS picks, for ranks that join it as clients (as under torchrun's agent).
c10::intrusive_ptr<c10d::TCPStore> storeOnAFreePort()
{
    c10d::TCPStoreOptions options;
    options.port = 0;
    options.isServer = true;
    options.waitWorkers = false;
    options.timeout = std::chrono::seconds(60);
    return c10::make_intrusive<c10d::TCPStore>("127.0.0.1", options);
}

// Rank r of a run of two meeting at the store on `port` as torchrun's agent store.
ClusterEnvironment rankOfTwo(int r, int port)
{
    ClusterEnvironment environment;
    environment.rank = r;
    environment.worldSize = 2;
    environment.masterAddress = "127.0.0.1";
    environment.masterPort = port;
    environment.agentStore = true;
    return environment;
}

TEST(Lockstep, RanksExchangeAndAFailureReachesEveryRank)
{
    if (!Cluster::available())
        TORCHSCOPE_MISSING_CAPABILITY("c10d's Gloo (this build has no distributed jobs)");
    const auto store = storeOnAFreePort();
    auto rank = [port = store->getPort()](int r) {
        Cluster cluster(rankOfTwo(r, port), std::chrono::seconds(60));
        Lockstep lockstep(cluster);
        StepResult mine;
        mine.images = 10 + r;
        mine.agreement = std::string(r == 0 ? 3 : 5000, 'x'); // payloads of different sizes
        const auto all = lockstep.exchange(mine);
        std::string seen = std::to_string(all.at(0).images) + "," + std::to_string(all.at(1).images) + ","
            + std::to_string(all.at(1).agreement.size());
        const auto gathered = cluster.gatherToRoot(r == 0 ? "" : std::string(100000, 'y'));
        seen += "," + std::to_string(gathered.size() == 2 ? gathered[1].size() : 0);
        try {
            if (r == 1)
                lockstep.fail("boom on rank 1");
            lockstep.exchange({});
            seen += ",no failure";
        } catch (const JobError& e) {
            seen += std::string(",") + e.what();
        }
        return seen;
    };
    auto zero = std::async(std::launch::async, rank, 0);
    auto one = std::async(std::launch::async, rank, 1);
    EXPECT_EQ(zero.get(), "10,11,5000,100000,rank 1 failed: boom on rank 1");
    EXPECT_EQ(one.get(), "10,11,5000,0,boom on rank 1");
}

// Vectors of a sparse structure: 3 of 40 random directions per vector, plus an offset.
at::Tensor sparseVectors(int64_t n, int64_t dIn, at::Generator& generator)
{
    const at::Tensor atoms = at::randn({40, dIn}, generator, at::kFloat);
    const at::Tensor chosen = at::rand({n, 40}, generator, at::kFloat).argsort(false, 1).narrow(1, 0, 3);
    const at::Tensor codes = at::zeros({n, 40}).scatter_(1, chosen, at::rand({n, 3}, generator, at::kFloat) + 0.5);
    return codes.matmul(atoms) + 0.3;
}

TEST(SaeOverRanks, TwoRanksTrainAsOneProcessOnTheirPartsConcatenated)
{
    if (!Cluster::available())
        TORCHSCOPE_MISSING_CAPABILITY("c10d's Gloo (this build has no distributed jobs)");
    for (const bool batchTopK : {false, true}) {
        SCOPED_TRACE(batchTopK ? "BatchTopK" : "TopK");
        SaeConfig config;
        config.dIn = 16;
        config.dSae = 64;
        config.k = 4;
        config.batchTopK = batchTopK;
        config.matryoshkaWidths = {16};
        config.geometricMedianInit = true; // from every rank's first part
        config.learningRate = 3e-3;
        config.warmupSteps = 5;
        config.totalSteps = 30;
        config.deadAfterVectors = 256; // silent for one whole step: dead (AuxK over the ranks' dead counts)
        config.seed = 4;
        at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(9);
        std::vector<at::Tensor> batches;
        for (int step = 0; step < 30; ++step)
            batches.push_back(sparseVectors(256, config.dIn, generator));

        SparseAutoencoder one(config);
        std::vector<SaeStepMetrics> oneMetrics;
        for (const auto& batch : batches)
            oneMetrics.push_back(one.trainStep(batch));

        const auto store = storeOnAFreePort();
        auto rank = [&, port = store->getPort()](int r) {
            Cluster cluster(rankOfTwo(r, port), std::chrono::seconds(60));
            SparseAutoencoder sae(config);
            std::vector<SaeStepMetrics> metrics;
            for (const auto& batch : batches) // rank r: rows [128 r, 128 r + 128) of every step
                metrics.push_back(sae.trainStep(batch.narrow(0, 128 * r, 128), &cluster));
            return std::make_pair(sae.weights(), metrics);
        };
        auto zero = std::async(std::launch::async, rank, 0);
        auto onePart = std::async(std::launch::async, rank, 1);
        const auto [weights0, metrics0] = zero.get();
        const auto [weights1, metrics1] = onePart.get();
        const auto expected = one.weights();
        for (const auto& [key, tensor] : expected) {
            EXPECT_TRUE(at::equal(weights0.at(key), weights1.at(key))) << key << ": the ranks' SAEs differ";
            EXPECT_TRUE(at::allclose(weights0.at(key), tensor, 1e-4, 1e-5))
                << key << ": off by " << (weights0.at(key) - tensor).abs().max().item<double>();
        }
        EXPECT_GT(oneMetrics.back().deadFraction, 0.0) << "no latent died: AuxK went untested";
        for (size_t step = 0; step < oneMetrics.size(); ++step) {
            SCOPED_TRACE("step " + std::to_string(step));
            const SaeStepMetrics& a = oneMetrics[step];
            const SaeStepMetrics& b = metrics0[step];
            EXPECT_EQ(b.vectors, a.vectors);
            EXPECT_EQ(b.deadFraction, a.deadFraction);
            for (const auto& [name, x, y] :
                {std::tuple{"loss", a.loss, b.loss}, std::tuple{"mse", a.mse, b.mse},
                    std::tuple{"aux", a.auxLoss, b.auxLoss}, std::tuple{"matryoshka", a.matryoshkaMse, b.matryoshkaMse},
                    std::tuple{"fvu", a.fvu, b.fvu}, std::tuple{"l0", a.l0, b.l0}})
                EXPECT_NEAR(y, x, 1e-4 * std::abs(x) + 1e-6) << name;
        }
    }
}

TEST(SaeOverRanks, PartsOfDifferentSizesAreRefused)
{
    if (!Cluster::available())
        TORCHSCOPE_MISSING_CAPABILITY("c10d's Gloo (this build has no distributed jobs)");
    const auto store = storeOnAFreePort();
    auto rank = [port = store->getPort()](int r) {
        Cluster cluster(rankOfTwo(r, port), std::chrono::seconds(60));
        SaeConfig config;
        config.dIn = 8;
        config.dSae = 16;
        config.k = 2;
        SparseAutoencoder sae(config);
        try {
            sae.trainStep(at::randn({r == 0 ? 10 : 12, 8}), &cluster);
            return std::string("no error");
        } catch (const Error& e) {
            return std::string(e.what());
        }
    };
    auto zero = std::async(std::launch::async, rank, 0);
    auto one = std::async(std::launch::async, rank, 1);
    EXPECT_EQ(zero.get(), "the ranks' parts of a training step differ in size (this rank's: 10 vectors, all: 22)");
    EXPECT_EQ(one.get(), "the ranks' parts of a training step differ in size (this rank's: 12 vectors, all: 22)");
}

} // namespace
} // namespace torchscope::test
