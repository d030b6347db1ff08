#include "analysis/analysis_table.h"

#include "attention/attention_names.h"
#include "attribution/attribution_names.h"
#include "common/error.h"
#include "common/strings.h"

#include <nlohmann/json.hpp>

#include <sstream>

namespace torchscope {
namespace {

const std::vector<std::string> TensorFiles{"pt", "npz", "npy", "safetensors"};

std::vector<AnalysisInfo> makeTable()
{
    using enum AnalysisLane;
    const std::vector<std::string> methods = namesOf(attributionMethodChoices());
    const std::vector<std::string> metrics = namesOf(faithfulnessMetricChoices());
    return {
        {"run", "Run", Interactive, "core/run", "ImageRunner::run (run/image_run)", "ImageRunConfig", "ImageRunResult",
            {"run"}, "every tab: the run on the window's images", TensorFiles, {}, {}},
        {"gradcam", "Grad-CAM", Interactive, "core/attribution", "computeGradCam (attribution/grad_cam_images)",
            "GradCamRequest", "GradCamResult", {"gradcam"}, "Grad-CAM / Saliency view", TensorFiles, {}, {}},
        {"patch", "Patching", Interactive, "core/patching", "patchImages (patching/patch_images)", "PatchRequest",
            "PatchResult", {"patch"}, "Patching view", TensorFiles, {}, {}},
        {"setup", "Input Setup", Interactive, "core/graph", "adviseSetup (graph/setup_advice)", "ModelSetup",
            "SetupAdvice", {"setup"}, "Model > Input Setup…", {"json"}, {}, {}},
        {"record", "Recording", Batch, "core/record", "RecordAnalysis (record/folder_recording)", "RecordRequest",
            "RecordResult", {"record"}, "Recorders tab", {"pt", "npz", "safetensors", "csv", "json"}, {}, {}},
        {"probe", "Probe Training", Batch, "core/probe", "ProbeAnalysis (probe/folder_probes)", "ProbeRequest",
            "ProbeResult", {"probe"}, "Probes tab", {"pt", "csv"}, {}, {}},
        {"probe-scores", "Probe File", Interactive, "core/probe", "ProbeScoresAnalysis (probe/folder_probes)",
            "ProbeScoresRequest", "ProbeScores", {"run"}, "Probes tab: Apply Probe File…", {}, {}, {}},
        {"compare", "Comparison", Batch, "core/compare", "compareModels / comparePrecisions (compare/compare_run)",
            "CompareRequest", "CompareResult", {"compare"}, "Compare tab", {"pt", "json", "csv"}, {}, {}},
        {"layer-maps", "Layer Maps", Batch, "core/compare", "layerPairMaps (compare/layer_pair_maps)",
            "LayerMapsRequest", "LayerPairResult", {"compare"}, "Compare tab: a clicked cell", TensorFiles, {}, {}},
        {"visualize", "Feature Visualisation", Batch, "core/visualize", "visualize (visualize/activation_maximization)",
            "VisualizeRequest", "ChannelVisualization", {"visualize"}, "a channel's page", {"png", "pt", "json"}, {},
            {}},
        {"attribute", "Attribution Maps", Batch, "core/attribution", "attributeInputs (attribution/input_attributions)",
            "InputAttributionRequest", "InputAttributionResult", {"attribute"}, "Attribution tab", TensorFiles, methods,
            {}},
        {"evaluate", "Faithfulness", Batch, "core/attribution", "evaluateFaithfulness (attribution/faithfulness)",
            "FaithfulnessRequest", "FaithfulnessResult", {"evaluate"}, "Attribution tab: metrics", {"json", "csv"},
            methods, metrics},
        {"sanity", "Sanity Check", Batch, "core/attribution", "checkSanity (attribution/sanity_checks)",
            "SanityRequest", "SanityResult", {"sanity"}, "Attribution tab: sanity check",
            {"json", "csv", "pt", "npz", "safetensors"}, methods, {}},
        {"attribution", "Attribution", Batch, "core/attribution",
            "runAttributionWorkbench (attribution/attribution_workbench)", "AttributionWorkbenchRequest",
            "AttributionWorkbenchResult", {"attribute", "evaluate", "sanity"}, "Attribution tab",
            {"json", "pt", "npz", "safetensors"}, methods, metrics},
        {"attention", "Attention Maps", Batch, "core/attention",
            "runAttentionWorkbench (attention/attention_workbench)", "AttentionWorkbenchRequest",
            "AttentionWorkbenchResult", {"attention"}, "Attention tab", TensorFiles, attentionMethods(), {}},
        {"crp", "Concept Relevance", Batch, "core/relevance", "computeConceptRelevance (relevance/concept_relevance)",
            "ConceptRelevanceRequest", "ConceptRelevanceResult", {"crp"}, "Relevance tab",
            {"json", "pt", "npz", "safetensors"}, {}, {}},
        {"sae_train", "SAE Training", Batch, "core/sae", "trainSparseAutoencoders (sae/sae_training)",
            "SaeTrainingRequest", "SaeTrainingResult", {"sae train"}, "Features tab", {"safetensors", "json", "csv"},
            {}, {}},
        {"sae_evaluate", "SAE Evaluation", Batch, "core/sae", "evaluateSparseAutoencoder (sae/sae_evaluation)",
            "SaeEvaluationRequest", "SaeEvaluationResult", {"sae evaluate"}, "Features tab", {"json"}, {}, {}},
        {"sae_latents", "SAE Latents", Batch, "core/sae", "computeSaeLatents (sae/sae_latents)", "SaeLatentsRequest",
            "SaeLatentsResult", {"sae latents"}, "Features tab", {"json"}, {}, {}},
        {"dissect", "Dissection", Batch, "core/concepts", "dissect (concepts/dissection)", "DissectionRequest",
            "DissectionResult", {"dissect"}, "Concepts tab", {"json", "csv"}, {"iou", "invert", "both"}, {}},
    };
}

} // namespace

const std::vector<AnalysisInfo>& analysisTable()
{
    static const std::vector<AnalysisInfo> table = makeTable();
    return table;
}

const AnalysisInfo& analysisInfo(const std::string& name)
{
    for (const auto& row : analysisTable())
        if (row.name == name)
            return row;
    throw Error("the table of analyses has no '" + name + "'");
}

std::string laneName(AnalysisLane lane)
{
    return lane == AnalysisLane::Interactive ? "interactive" : "batch";
}

std::string analysisTableJson()
{
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& row : analysisTable())
        rows.push_back({{"name", row.name}, {"title", row.title}, {"lane", laneName(row.lane)}, {"room", row.room},
            {"operation", row.operation}, {"request", row.request}, {"result", row.result}, {"commands", row.commands},
            {"window", row.window}, {"writes", row.writes}, {"methods", row.methods}, {"metrics", row.metrics}});
    return rows.dump(2) + "\n";
}

std::string analysisTableMarkdown()
{
    std::ostringstream out;
    out << "| analysis | operation | in | out | CLI | window | lane |\n";
    out << "| --- | --- | --- | --- | --- | --- | --- |\n";
    for (const auto& row : analysisTable()) {
        std::vector<std::string> commands;
        for (const auto& command : row.commands)
            commands.push_back("`" + command + "`");
        out << "| " << row.name << " | " << row.operation << " | `" << row.request << "` | `" << row.result << "` | "
            << join(commands, ", ") << " | " << row.window << " | " << laneName(row.lane) << " |\n";
    }
    return out.str();
}

} // namespace torchscope
