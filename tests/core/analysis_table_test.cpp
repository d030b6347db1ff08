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
#include "compare/compare_folder.h"
#include "graph/engine.h"
#include "graph/setup_advice.h"
#include "model/model.h"
#include "model/model_setup.h"
#include "patching/patch_images.h"
#include "probe/folder_probes.h"
#include "record/folder_recording.h"
#include "visualize/channel_visualization.h"

#include <gtest/gtest.h>
#include <torch/script.h>

#include <set>

namespace torchscope::test {
namespace {

const std::string Demo = std::string(TORCHSCOPE_SOURCE_DIR) + "/resources/demo/fashion_cnn.pt";
std::string demoImage(const std::string& name)
{
    return std::string(TORCHSCOPE_SOURCE_DIR) + "/resources/demo/images/" + name;
}

template <typename... Analyses> std::vector<std::string> namesOfTypes()
{
    return {Analyses::name...};
}

TEST(AnalysisTable, EveryAnalysisTypeHasARowAndEveryNameIsOne)
{
    const auto types = namesOfTypes<GradCamAnalysis, PatchAnalysis, SetupAdviceAnalysis, RecordAnalysis, ProbeAnalysis,
        ProbeScoresAnalysis, CompareAnalysis, LayerMapsAnalysis, VisualizeAnalysis, AttributionAnalysis,
        AttentionAnalysis>();
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
    EXPECT_EQ(namesOf(attributionMethodChoices()).size(), 14u);
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
    request.setup = storedSetup(*Model::load(Demo)).value_or(ModelSetup{});
    LoadedModels models;
    ModelKey key;
    key.path = Demo;
    int reports = 0;
    AnalysisContext context{models, key, [&](const Progress&) { return ++reports > 0; }, {}};
    const GradCamResult viaContext = GradCamAnalysis::run(context, request);
    Engine engine(Model::load(Demo));
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
    key.path = Demo;
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
    // The report the CLI's sanity writes is the one the window exports.
    EXPECT_EQ(result.report.sanity.at("saliency").size(), result.sanity.at("saliency").size());
    EXPECT_EQ(result.report.images.size(), 2u);
    EXPECT_EQ(result.report.model, Demo);
}

} // namespace
} // namespace torchscope::test
