#pragma once

#include "common/batch_stream.h"
#include "imaging/image_folder.h"
#include "preprocess/preprocessing.h"
#include "probe/probe_dataset.h"

namespace torchscope {

// An ImageFolder-style directory (one subfolder per class) as probe samples, decoded ahead on
// worker threads. Classes are the subfolders in name order; the fingerprint covers every image's
// path, size and modification time. Throws torchscope::Error for a folder without two classes.
ProbeSamples folderSamples(
    const ImageFolder& folder, const Preprocessing& preprocessing, int batchSize, int threads, const Shard& shard = {});

} // namespace torchscope
