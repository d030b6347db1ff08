#pragma once

// Probe training data collected by the ranks of a distributed run: each rank grabs the features of its share
// of the samples (a Shard), in lockstep with the others, and rank 0 gets them all in sample order.

#include "common/progress.h"
#include "probe/probe_dataset.h"

namespace torchscope {

class Engine;
class Lockstep;

// On rank 0: the whole dataset, as collectProbeDataset would give it in one process (rows in sample
// order, skipped files in batch order); elsewhere: an empty dataset (the rank's part went to rank
// 0). A stop asked on any rank (`progress` returning false) cancels every rank. No activation
// cache: each rank sees only its share. Throws torchscope::Error on every rank when one fails.
ProbeDataset collectProbeDatasetTogether(Lockstep& lockstep, Engine& engine, const std::vector<std::string>& layers,
    ProbePooling pooling, ProbeSamples& share, const ProgressCallback& progress = {});

} // namespace torchscope
