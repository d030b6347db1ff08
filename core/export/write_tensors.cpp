#include "export/write_tensors.h"

#include "common/atomic_file.h"
#include "export/manifest.h"

#include "common/error.h"
#include "export/array_files.h"
#include "export/pt_export.h"
#include "export/tensor_formats.h"

namespace torchscope {

std::vector<std::string> writeTensors(
    const std::string& path, const NamedValues& values, const ExportManifest* manifest)
{
    std::string manifestText;
    if (manifest) {
        ExportManifest described = *manifest;
        if (described.keys.empty())
            for (const auto& [key, value] : values)
                described.keys.push_back(ManifestKey::capture(key));
        manifestText = manifestJson(described);
    }
    const auto besideIt = [&] {
        if (manifest)
            writeFileAtomically(manifestPathFor(path), manifestText);
    };
    const TensorFormatInfo* format = tensorFormatForPath(path);
    if (!format) {
        std::string known;
        for (const auto& f : tensorFormats())
            known += (known.empty() ? "" : ", ") + f.extension;
        throw Error("cannot write '" + path + "': unknown file type; use one of " + known);
    }
    if (format->extension == ".pt") {
        writePtDictionary(path, values);
        besideIt();
        return {};
    }
    NamedTensors tensors;
    std::vector<std::string> skipped;
    for (const auto& [key, value] : values) {
        if (value.isTensor())
            tensors.emplace_back(key, value.toTensor());
        else
            skipped.push_back(key);
    }
    if (format->extension == ".npz")
        writeNpz(path, tensors);
    else
        writeSafetensors(path, tensors, manifestText);
    besideIt();
    return skipped;
}

} // namespace torchscope
