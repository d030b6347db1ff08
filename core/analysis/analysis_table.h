#pragma once

// The table of analyses: every analysis TorchScope offers, one row each (docs/core_operations.md is
// checked against it). The window's job runner takes an analysis's lane and title from its row,
// `torchscope-cli analyses` prints it, and the tests check that each row's commands, result types
// and names exist. Adding an analysis: a row here, a core operation in its room (an XAnalysis type,
// graph/analysis_context.h), a thin tab and a thin command. No Torch here.

#include "graph/analysis_context.h"

#include <string>
#include <vector>

namespace torchscope {

struct AnalysisInfo {
    std::string name; // the row's key; the analysis type's `name`
    std::string title; // the window's word for it: job names, error boxes ("Grad-CAM")
    AnalysisLane lane = AnalysisLane::Batch;
    std::string room; // where it lives: "core/attribution"
    std::string operation; // the core function behind it: "computeGradCam (attribution/grad_cam_images)"
    std::string request, result; // its types
    std::vector<std::string> commands; // the torchscope-cli commands that run it
    std::string window; // where the window shows it
    std::vector<std::string> writes; // the formats its result is written in
    std::vector<std::string> methods; // its methods, where it has a choice of them
    std::vector<std::string> metrics; // its metrics, likewise
};

const std::vector<AnalysisInfo>& analysisTable();
// The row named `name`; throws torchscope::Error for a name the table lacks.
const AnalysisInfo& analysisInfo(const std::string& name);
std::string laneName(AnalysisLane lane); // "interactive", "batch"

// The table as JSON (`torchscope-cli analyses --json`) and as a Markdown table.
std::string analysisTableJson();
std::string analysisTableMarkdown();

} // namespace torchscope
