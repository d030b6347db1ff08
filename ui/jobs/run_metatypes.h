#pragma once

// The run types as Qt meta types, so they travel through queued signals between threads.
// Included by every header whose signals carry them, before moc sees their use.

#include "graph/setup_advice.h"
#include "jobs/run_types.h"

#include <QMetaType>

Q_DECLARE_METATYPE(torchscope::ModelSummary)
Q_DECLARE_METATYPE(torchscope::RunRequest)
Q_DECLARE_METATYPE(torchscope::RunJobResultPtr)
Q_DECLARE_METATYPE(torchscope::SetupAdvice)

#include "jobs/analysis_types.h"

// The results panels pass on in their own signals (finished, shown).
Q_DECLARE_METATYPE(torchscope::RecordResultPtr)
Q_DECLARE_METATYPE(torchscope::ProbeResultPtr)
Q_DECLARE_METATYPE(torchscope::ProbeScoresPtr)
Q_DECLARE_METATYPE(torchscope::GradCamResultPtr)
Q_DECLARE_METATYPE(torchscope::PatchResultPtr)
Q_DECLARE_METATYPE(torchscope::AttributionWorkbenchResultPtr)
Q_DECLARE_METATYPE(torchscope::AttentionWorkbenchResultPtr)
Q_DECLARE_METATYPE(torchscope::ConceptRelevanceResultPtr)
