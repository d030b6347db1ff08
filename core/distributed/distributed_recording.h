#pragma once

// A recording split over the ranks of a distributed run: each rank records its share of the batches (a
// Shard), the ranks go through them in lockstep, and the recorders are merged exactly on rank 0.

#include "record/batch_run.h"

#include <cstdint>
#include <optional>

namespace torchscope {

class Engine;
class Lockstep;
class Recorder;

// Records this rank's share in step with the other ranks. The summary counts the whole run (every
// rank's images, samples and skipped files, in batch order); a stop asked on any rank (`progress`
// returning false) ends every rank after the same step, keeping only whole steps. Throws
// torchscope::Error on every rank when one fails, with its message.
FolderRunResult recordShareTogether(Lockstep& lockstep, Engine& engine, Recorder& recorder, const BatchStream& share,
    const ProgressCallback& progress = {});

// What merging cost on rank 0: the other ranks' serialised recordings and the time to receive and
// fold them in.
struct MergeResult {
    int64_t bytes = 0;
    double seconds = 0.0;
};

// Folds every rank's recording into rank 0's recorder and summary; returns the figures there,
// nothing on the other ranks (theirs stay as they were). Every rank calls it after
// recordShareTogether.
std::optional<MergeResult> mergeRecordingsToRoot(Lockstep& lockstep, Recorder& recorder, FolderRunResult& summary);

} // namespace torchscope
