#pragma once

// The analyses' results as the window keeps them: shared, never copied. Plain values, no Torch, no Qt.

#include "attention/attention_workbench.h"
#include "attribution/attribution_workbench.h"
#include "attribution/grad_cam_images.h"
#include "common/float_tensor.h"
#include "jobs/run_types.h"
#include "model/model_setup.h"
#include "patching/patch_images.h"
#include "probe/folder_probes.h"
#include "relevance/concept_relevance.h"

#include <memory>
#include <string>
#include <vector>

namespace torchscope {

// Probes (core/probe/folder_probes.h): trained on an ImageFolder, and a probe file applied.
using ProbeResultPtr = std::shared_ptr<const ProbeResult>;
using ProbeScoresPtr = std::shared_ptr<const ProbeScores>;

// Grad-CAM and patching are core operations (attribution/grad_cam_images.h, patching/patch_images.h):
// their results travel as they are.
using GradCamResultPtr = std::shared_ptr<const GradCamResult>;
using PatchResultPtr = std::shared_ptr<const PatchResult>;
using AttributionWorkbenchResultPtr = std::shared_ptr<const AttributionWorkbenchResult>;
using AttentionWorkbenchResultPtr = std::shared_ptr<const AttentionWorkbenchResult>;
using ConceptRelevanceResultPtr = std::shared_ptr<const ConceptRelevanceResult>;

} // namespace torchscope
