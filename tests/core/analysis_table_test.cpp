// The table of analyses (analysis/analysis_table.h) against the analysis types, and an analysis run
// through its context (graph/analysis_context.h) against its core operation called directly.
#include "test_support.h"

#include "analysis/analysis_table.h"
#include "attention/attention_workbench.h"
#include "attribution/attribution_names.h"
#include "attribution/attribution_workbench.h"
#include "attribution/faithfulness.h"
#include "attribution/grad_cam_images.h"
#include "attribution/input_attributions.h"
#include "common/finite_summary.h"
#include "common/tensor_conversion.h"
#include "compare/compare_folder.h"
#include "compare/layer_pair_maps.h"
#include "concepts/dissection.h"
#include "export/pt_export.h"
#include "graph/engine.h"
#include "graph/request.h"
#include "graph/setup_advice.h"
#include "imaging/image_folder.h"
#include "imaging/image_tensor.h"
#include "model/model.h"
#include "model/model_setup.h"
#include "patching/patch_images.h"
#include "probe/folder_probes.h"
#include "probe/linear_probe.h"
#include "record/folder_recording.h"
#include "record/layer_statistics.h"
#include "relevance/concept_relevance.h"
#include "sae/sae_evaluation.h"
#include "sae/sae_latents.h"
#include "sae/sae_training.h"
#include "visualize/channel_visualization.h"

#include <gtest/gtest.h>
#include <torch/script.h>

#include <cmath>
#include <filesystem>
#include <numeric>
#include <set>

namespace torchscope::test {
namespace {

template <typename... Analyses> std::vector<std::string> namesOfTypes()
{
    return {Analyses::name...};
}

TEST(AnalysisTable, EveryAnalysisTypeHasARowAndEveryNameIsOne)
{
    const auto types = namesOfTypes<GradCamAnalysis, PatchAnalysis, SetupAdviceAnalysis, RecordAnalysis, ProbeAnalysis,
        ProbeScoresAnalysis, CompareAnalysis, LayerMapsAnalysis, VisualizeAnalysis, AttributionAnalysis,
        AttentionAnalysis, ConceptRelevanceAnalysis, SaeTrainingAnalysis, SaeEvaluationAnalysis, SaeLatentsAnalysis,
        DissectionAnalysis>();
    for (const auto& name : types)
        EXPECT_EQ(analysisInfo(name).name, name);
    std::set<std::string> names;
    for (const auto& row : analysisTable()) {
        EXPECT_TRUE(names.insert(row.name).second) << "twice: " << row.name;
        EXPECT_FALSE(row.title.empty()) << row.name;
        EXPECT_FALSE(row.commands.empty()) << row.name << " has no command";
        EXPECT_TRUE(row.room.rfind("core/", 0) == 0) << row.name << ": " << row.room;
    }
    EXPECT_NE(errorOf([] { analysisInfo("dissection"); }).find("no 'dissection'"), std::string::npos);
    // The window's lanes: short work on the interactive lane, long work on the batch lane.
    EXPECT_EQ(analysisInfo(GradCamAnalysis::name).lane, AnalysisLane::Interactive);
    EXPECT_EQ(analysisInfo(RecordAnalysis::name).lane, AnalysisLane::Batch);
    EXPECT_EQ(analysisInfo(AttributionAnalysis::name).lane, AnalysisLane::Batch);
}

TEST(AnalysisTable, NamesComeFromOnePlace)
{
    // The table, the operation and the choices the CLI and the window list are one list.
    EXPECT_EQ(analysisInfo("attribute").methods, attributionMethods());
    EXPECT_EQ(analysisInfo("evaluate").metrics, faithfulnessMetrics());
    EXPECT_EQ(namesOf(attributionMethodChoices()).size(), 15u);
    for (const auto& method : attributionMethodChoices())
        EXPECT_EQ(method.layer, isLayerMethod(method.name)) << method.name;
    for (const auto& metric : faithfulnessMetricChoices())
        EXPECT_NE(metric.better, 0) << metric.name << " says which way is better";
}

TEST(AnalysisContext, AnAnalysisThroughItsContextEqualsItsOperation)
{
    GradCamRequest request;
    request.images = {demoImage("bag.png"), demoImage("coat.png")};
    request.layer = "features.1";
    request.setup = storedSetup(*Model::load(demoModelPath())).value_or(ModelSetup{});
    LoadedModels models;
    ModelKey key;
    key.path = demoModelPath();
    int reports = 0;
    AnalysisContext context{models, key, [&](const Progress&) { return ++reports > 0; }, {}};
    const GradCamResult viaContext = GradCamAnalysis::run(context, request);
    Engine engine(Model::load(demoModelPath()));
    const GradCamResult direct = computeGradCam(engine, request);
    ASSERT_EQ(viaContext.images.size(), 2u);
    ASSERT_EQ(direct.images.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
        EXPECT_EQ(viaContext.images[i].target, direct.images[i].target);
        EXPECT_EQ(viaContext.images[i].gradCam.values, direct.images[i].gradCam.values);
        EXPECT_EQ(viaContext.images[i].saliency.values, direct.images[i].saliency.values);
    }
    EXPECT_GT(reports, 0) << "the context's progress callback was reached";
    // The same key gives the same loaded model: the context does not reload per call.
    EXPECT_EQ(models.model(key).get(), models.model(key).get());
    EXPECT_EQ(models.engine(key).get(), models.engine(key).get());
}

TEST(AnalysisContext, TheSanityCheckRandomisesACopyNeverTheModelItRuns)
{
    LoadedModels models;
    ModelKey key;
    key.path = demoModelPath();
    const auto model = models.model(key);
    std::vector<at::Tensor> before;
    for (const auto& p : model->module().parameters())
        before.push_back(p.clone());
    AttributionWorkbenchRequest request;
    request.images = {demoImage("bag.png"), demoImage("dress.png")};
    request.setup = storedSetup(*model).value_or(ModelSetup{});
    request.methods = {"saliency"};
    request.sanityMode = "cascading";
    AnalysisContext context{models, key, {}, {}};
    const AttributionWorkbenchResult result = AttributionAnalysis::run(context, request);
    ASSERT_FALSE(result.sanity.at("saliency").empty());
    size_t k = 0;
    for (const auto& p : model->module().parameters())
        EXPECT_TRUE(at::equal(p, before[k++])) << "parameter " << k - 1 << " of the model the window runs changed";
    EXPECT_EQ(k, before.size());
    // The measures the CLI's sanity writes is the one the window exports.
    EXPECT_EQ(result.measures.sanity.at("saliency").size(), result.sanity.at("saliency").size());
    EXPECT_EQ(result.measures.images.size(), 2u);
    EXPECT_EQ(result.measures.model, demoModelPath());
}

ModelSetup demoSetup()
{
    return storedSetup(*Model::load(demoModelPath())).value_or(ModelSetup{});
}

TEST(WindowAnalyses, ARecordingKeepsTheEditsAndWritesWhatItRecorded)
{
    LoadedModels models;
    AnalysisContext context{models, ModelKey{demoModelPath()}, {}, {}};
    RecordRequest request;
    request.folder = fixture("labelled");
    request.grabs = {GrabSpec::parse("features.1")};
    request.setup = demoSetup();
    request.edits = {EditSpec::parse("features.1:zero:0")};
    request.manifest.command = "test";
    const RecordResult result = RecordAnalysis::run(context, request);
    const auto files = ImageFolder::scan(request.folder, request.setup.labels).images.size();
    EXPECT_EQ(result.images, static_cast<int64_t>(files));
    const LayerStatistics& stats = result.statistics.at("features.1");
    EXPECT_EQ(stats.channelMean.at(0), 0.0) << "channel 0 is zeroed by the edit in every batch";
    EXPECT_EQ(stats.channelMax.at(0), 0.0);
    EXPECT_NE(stats.channelMean.at(1), 0.0);
    EXPECT_EQ(result.edits, std::vector<std::string>{"features.1:zero:0"});
    EXPECT_EQ(result.manifest.images.size(), files);
    // Written as `record --out` writes it: the samples counted, the statistics beside.
    const auto dir = freshFolder("record");
    writeRecordResult((dir / "recording.pt").string(), result);
    const auto dict = readTorchSaveFile((dir / "recording.pt").string()).toGenericDict();
    EXPECT_EQ(dict.at("features.1:samples").toTensor().item<int64_t>(), static_cast<int64_t>(files));
    EXPECT_TRUE(std::filesystem::exists(dir / "recording.csv"));
    std::filesystem::remove_all(dir);
}

TEST(WindowAnalyses, ProbesHoldOutTheFractionAskedAndScoreImagesFromTheirFile)
{
    LoadedModels models;
    AnalysisContext context{models, ModelKey{demoModelPath()}, {}, {}};
    ProbeRequest request;
    request.folder = fixture("probe");
    request.layers = {"features.1"};
    request.setup = demoSetup();
    request.validationFraction = 0.5;
    const ProbeResult result = ProbeAnalysis::run(context, request);
    ASSERT_EQ(result.layers.size(), 1u);
    EXPECT_EQ(result.classNames, (std::vector<std::string>{"footwear", "rest"}));
    // The split is stratified: each class holds out round(0.5 × its samples) for validation.
    int64_t validated = 0;
    for (const auto& row : result.layers[0].confusion)
        validated += std::accumulate(row.begin(), row.end(), int64_t{0});
    int64_t expected = 0;
    for (const auto& folder : {"footwear", "rest"}) {
        const auto count = std::distance(std::filesystem::directory_iterator(fixture(std::string("probe/") + folder)),
            std::filesystem::directory_iterator{});
        expected += static_cast<int64_t>(std::round(0.5 * static_cast<double>(count)));
    }
    EXPECT_EQ(validated, expected);
    EXPECT_EQ(result.samples, 2 * expected);

    const auto dir = freshFolder("probe");
    const std::string file = (dir / "probe.pt").string();
    saveTrainedProbe(result, "features.1", file, false);
    EXPECT_NE(
        errorOf([&] { saveTrainedProbe(result, "features.2", file, false); }).find("no probe"), std::string::npos);
    ProbeScoresRequest scores;
    scores.file = file;
    scores.images = {fixture("probe/footwear/00.png"), fixture("probe/rest/00.png")};
    scores.setup = request.setup;
    const ProbeScores scored = ProbeScoresAnalysis::run(context, scores);
    EXPECT_EQ(scored.layer, "features.1");
    EXPECT_EQ(scored.classNames, result.classNames);
    ASSERT_EQ(scored.probabilities.size(), 2u);
    for (const auto& p : scored.probabilities)
        EXPECT_NEAR(p.at(0) + p.at(1), 1.0, 1e-6);
    std::filesystem::remove_all(dir);
}

TEST(WindowAnalyses, ACellsLayerMapsAreTheTwoPrecisionsRuns)
{
    LoadedModels models;
    AnalysisContext context{models, ModelKey{demoModelPath()}, {}, {}};
    LayerMapsRequest request;
    request.compare.config.mode = CompareMode::Precision;
    request.compare.modelA = demoModelPath();
    request.compare.preprocessing = demoSetup().preprocessing;
    request.image = demoImage("bag.png");
    request.layerA = request.layerB = "features.1";
    const LayerPairResult maps = LayerMapsAnalysis::run(context, request);
    LoadOptions float64, float32;
    float64.dtype = "float64";
    float32.dtype = "float32";
    Engine a(Model::load(demoModelPath(), float64)), b(Model::load(demoModelPath(), float32));
    const LayerPairResult direct = layerPairMaps(
        a, b, {request.image, "features.1", "features.1", request.compare.preprocessing, "float64", "float32"});
    EXPECT_EQ(maps.a.values, direct.a.values) << "A is the float64 run";
    EXPECT_EQ(maps.b.values, direct.b.values) << "B is the float32 run";
    EXPECT_NE(maps.a.values, maps.b.values) << "the precisions differ somewhere";
}

TEST(WindowAnalyses, AChannelsMapsOverTheTopImagesShareOneScale)
{
    LoadedModels models;
    AnalysisContext context{models, ModelKey{demoModelPath()}, {}, {}};
    VisualizeRequest request;
    request.model = demoModelPath();
    request.preprocessing = demoSetup().preprocessing;
    request.config.layer = "features.1";
    request.config.objectives = {Objective{}};
    request.config.objectives[0].channel = 2;
    request.topImages = {demoImage("bag.png"), demoImage("coat.png")};
    request.mapsOnly = true;
    const ChannelVisualization result = VisualizeAnalysis::run(context, request);
    ASSERT_EQ(result.topMaps.size(), 2u);
    ASSERT_EQ(result.topPictures.size(), 2u);
    EXPECT_TRUE(result.warnings.empty());
    // The oracle: the channel's raw maps from a plain grab, on one scale from their joint min to max.
    Engine engine(Model::load(demoModelPath()));
    std::vector<at::Tensor> raw;
    for (const auto& image : request.topImages) {
        Request grab;
        grab.grabOutput("features.1");
        const at::Tensor input = loadImageBatch({image}, request.preprocessing);
        raw.push_back(engine.run(grab, forwardInputsFromBatch(engine.model(), input)).tensor("features.1")[0][2]);
    }
    const float low = std::min(raw[0].min().item<float>(), raw[1].min().item<float>());
    const float high = std::max(raw[0].max().item<float>(), raw[1].max().item<float>());
    EXPECT_EQ(result.mapLow, low);
    EXPECT_EQ(result.mapHigh, high);
    ASSERT_GT(high, low);
    for (size_t i = 0; i < 2; ++i) {
        const at::Tensor expected = ((raw[i] - low) / (high - low)).clamp(0, 1).contiguous();
        ASSERT_EQ(result.topMaps[i].values.size(), static_cast<size_t>(expected.numel()));
        for (int64_t k = 0; k < expected.numel(); ++k)
            EXPECT_NEAR(result.topMaps[i].values[static_cast<size_t>(k)], expected.data_ptr<float>()[k], 1e-6);
        EXPECT_EQ(result.topPictures[i].shape.back(), 3);
    }
}

// The workbench explains one image at a time and hands each over as it is done. On 3 × 40 × 56 colour
// images (tests/fixtures/color_model.py), the parts are the maps and metrics of attributeInputs and
// evaluateFaithfulness run on all three images at once, seeded draws included (SmoothGrad's noise,
// a noise baseline, ROAD's imputation: image k draws with seed + k in both), in order, and they are
// the result's.
TEST(AttributionWorkbench, EachImageComesAsItIsDoneEqualToTheWholeBatch)
{
    const std::string model = fixture("color_cnn.pt");
    LoadedModels models;
    std::vector<WorkbenchImageResult> parts;
    AnalysisContext context{models, ModelKey{model}, {}, {}};
    context.partial = [&parts](std::shared_ptr<const void> part) {
        parts.push_back(*std::static_pointer_cast<const WorkbenchImageResult>(part));
    };
    AttributionWorkbenchRequest request;
    request.images = {fixture("color/disc.png"), fixture("color/stripes.png"), fixture("color/astronaut_a.png")};
    request.setup = storedSetup(*Model::load(model)).value();
    request.methods = {"smoothgrad", "integrated_gradients", "grad_cam"};
    request.layer = "features.4";
    request.steps = 8;
    request.samples = 4;
    request.baseline = "noise";
    request.seed = 7;
    request.metrics = {"deletion", "road_morf"};
    const AttributionWorkbenchResult result = AttributionAnalysis::run(context, request);
    ASSERT_EQ(result.images.size(), 3u);
    ASSERT_EQ(parts.size(), 3u);

    Engine engine(Model::load(model));
    const at::Tensor images = loadImageBatch(request.images, request.setup.preprocessing);
    ASSERT_EQ(images.sizes().vec(), (std::vector<int64_t>{3, 3, 40, 56}));
    const InputAttributionRequest attribution = inputAttributionRequest(request);
    const InputAttributionResult whole = attributeInputs(engine, images, attribution);
    const FaithfulnessRequest metrics = faithfulnessRequest(request, attribution);
    for (const auto& method : request.methods) {
        const at::Tensor maps = *inputSizedMap(whole.maps, method);
        const at::Tensor importance = pixelImportance(maps, 40, 56);
        const FaithfulnessResult scores = evaluateFaithfulness(engine, images, maps, whole.targets, metrics);
        for (size_t k = 0; k < 3; ++k) {
            const auto i = static_cast<int64_t>(k);
            EXPECT_EQ(parts[k].index, k);
            EXPECT_EQ(parts[k].image.image, request.images[k]);
            EXPECT_EQ(parts[k].image.target, whole.targets[k]);
            const WorkbenchMap& part = parts[k].maps.at(method);
            ASSERT_EQ(part.importance.shape, (std::vector<int64_t>{40, 56})) << method;
            EXPECT_TRUE(at::allclose(toTensor(part.importance), importance[i], 1e-5, 1e-6)) << method << " image " << k;
            EXPECT_EQ(toTensor(result.maps.at(method)[k].importance).equal(toTensor(part.importance)), true);
            for (const auto& metric : request.metrics) {
                const double expected = scores.metrics.at(metric).perImage[k];
                ASSERT_TRUE(std::isfinite(expected)) << metric;
                EXPECT_NEAR(part.metrics.at(metric), expected, 1e-6) << method << " " << metric << " image " << k;
                EXPECT_EQ(result.maps.at(method)[k].metrics.at(metric), part.metrics.at(metric));
            }
        }
        EXPECT_NEAR(result.summary.at(method).at("deletion").mean,
            summariseFinite(scores.metrics.at("deletion").perImage).mean, 1e-6);
    }
    EXPECT_EQ(result.measures.images.size(), 3u);
}

// A cancel reaches inside an image: occlusion of one 40 × 56 image is over a hundred forward passes (one per
// batch under this cap), and the job stops before the next one once asked, instead of at the end of
// the image. What finished stays: the image before, whole; the one in progress is left out.
TEST(AttributionWorkbench, ACancelStopsAtTheNextForwardPassKeepingTheImagesDone)
{
    const std::string model = fixture("color_cnn.pt");
    AttributionWorkbenchRequest request;
    request.images = {fixture("color/disc.png"), fixture("color/stripes.png")};
    request.setup = storedSetup(*Model::load(model)).value();
    request.methods = {"occlusion"};
    request.memoryBytes = 1; // one occluded input per forward pass
    Engine engine(Model::load(model));
    int images = 0;
    AttributionWorkbenchReports reports;
    reports.onImage = [&images](const WorkbenchImageResult&) { ++images; };
    // The forward passes of one image: the prediction, then one per occluded position.
    int asked = 0;
    reports.cancelled = [&asked] { return ++asked > 1000000; };
    const AttributionWorkbenchResult full = runAttributionWorkbench(engine, nullptr, request, reports);
    ASSERT_EQ(full.images.size(), 2u);
    const int perImage = asked / 2;
    ASSERT_GT(perImage, 100) << "occlusion runs one forward pass per position here";

    for (const int stopAt : {5, perImage + 5}) {
        asked = 0;
        images = 0;
        reports.cancelled = [&asked, stopAt] { return ++asked >= stopAt; };
        const AttributionWorkbenchResult result = runAttributionWorkbench(engine, nullptr, request, reports);
        EXPECT_TRUE(result.cancelled);
        EXPECT_EQ(asked, stopAt) << "no forward pass ran after the cancel was seen";
        const size_t done = stopAt > perImage ? 1 : 0;
        EXPECT_EQ(result.images.size(), done);
        EXPECT_EQ(static_cast<size_t>(images), done);
        EXPECT_EQ(result.maps.count("occlusion") ? result.maps.at("occlusion").size() : 0, done);
        if (done == 1)
            EXPECT_TRUE(toTensor(result.maps.at("occlusion")[0].importance)
                            .equal(toTensor(full.maps.at("occlusion")[0].importance)));
    }
}

// The Attention tab's operation on 3 x 40 x 56 colour images and a ViT of a 5 x 7 patch grid after a
// class token and two register tokens (tests/fixtures/color_model.py): a head's map for any query
// and the token under a point of the picture are read row by row, 7 patches wide and 5 high, from
// the probabilities the operation kept (themselves held against the eager model in test_attention.py).
TEST(WindowAnalyses, AttentionOnANonSquareGridReadsRowsOfItsWidth)
{
    const std::string vit = fixture("register_vit.pt");
    LoadedModels models;
    AnalysisContext context{models, ModelKey{vit}, {}, {}};
    AttentionWorkbenchRequest request;
    request.images = {fixture("color/disc.png"), fixture("color/stripes.png")};
    request.setup = storedSetup(*Model::load(vit)).value();
    const AttentionWorkbenchResult result = AttentionAnalysis::run(context, request);
    ASSERT_TRUE(result.spatial);
    EXPECT_EQ(result.prefix, 3);
    EXPECT_EQ(result.gridHeight, 5);
    EXPECT_EQ(result.gridWidth, 7);
    EXPECT_EQ(result.patchSize, 8);
    ASSERT_EQ(result.images.size(), 2u);
    ASSERT_EQ(result.layers.size(), 3u);
    const at::Tensor p = toTensor(result.layers[1].probabilities); // [2, 4, 38, 38]
    ASSERT_EQ(p.sizes().vec(), (std::vector<int64_t>{2, 4, 38, 38}));
    for (const int64_t query : {int64_t{-1}, int64_t{0}, int64_t{15}, int64_t{37}}) {
        const FloatTensor map = attentionHeadMap(result, 1, 1, 2, query);
        ASSERT_EQ(map.shape, (std::vector<int64_t>{5, 7})) << query;
        const at::Tensor want = p[1][2][query < 0 ? 0 : query].narrow(0, 3, 35).reshape({5, 7});
        EXPECT_TRUE(toTensor(map).equal(want)) << "query " << query;
    }
    // The token under a point: x across the 7 columns, y down the 5 rows.
    EXPECT_EQ(patchToken(result, 0.99, 0.0), 3 + 6);
    EXPECT_EQ(patchToken(result, 0.0, 0.99), 3 + 4 * 7);
    EXPECT_EQ(patchToken(result, 0.5, 0.5), 3 + 2 * 7 + 3);
    EXPECT_EQ(result.images[0].rollout.shape, (std::vector<int64_t>{5, 7}));
    EXPECT_EQ(result.images[0].legrad.shape, (std::vector<int64_t>{5, 7}));
    EXPECT_EQ(result.images[0].picture.shape, (std::vector<int64_t>{40, 56, 3}));
}

} // namespace
} // namespace torchscope::test
