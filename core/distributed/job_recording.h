#pragma once

// A recording split over the ranks of a job: each rank records its share of the batches (a
// Shard), the ranks go through them in lockstep, and the recorders are merged exactly on rank 0.

#include "record/batch_run.h"

namespace torchscope {

class Engine;
class Lockstep;
class Recorder;

// Records this rank's share in step with the other ranks. The summary counts the whole job (every
// rank's images, samples and skipped files, in batch order); a stop asked on any rank (`progress`
// returning false) ends every rank after the same step, keeping only whole steps. Throws
// torchscope::Error on every rank when one fails, with its message.
FolderRunSummary recordShareTogether(
    Lockstep& lockstep, Engine& engine, Recorder& recorder, const BatchStream& share, const BatchProgress& progress = {});

// Folds every rank's recording into rank 0's recorder and summary; returns true there, false on
// the other ranks (theirs stay as they were). Every rank calls it after recordShareTogether.
bool mergeRecordingsToRoot(Lockstep& lockstep, Recorder& recorder, FolderRunSummary& summary);

} // namespace torchscope
