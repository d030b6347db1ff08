#pragma once

// Writes a comparison for Python and spreadsheets, atomically, by the path's extension:
//   FILE.pt    one dictionary for torch.load: "cka" [A, B] float64, "layers_a", "layers_b", and
//              "comparisons", a list of dictionaries with a float64 tensor per measure
//   FILE.json  the same as JSON (NaN as null)
//   FILE.csv   the per-layer table (checkpoints, precision), or the CKA matrix (cka): one row per
//              layer of A, one column per layer of B

#include "compare/comparison.h"

#include <string>

namespace torchscope {

struct ExportManifest;

// With a manifest, FILE.manifest.json beside (its keys, when not given, the layers of A and B).
// Throws torchscope::Error.
void writeComparison(const std::string& path, const CompareResult& result, const ExportManifest* manifest = nullptr);

std::string comparisonCsv(const CompareResult& result);
std::string comparisonJson(const CompareResult& result);

} // namespace torchscope
