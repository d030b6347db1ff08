#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace torchscope {

class ZipArchive;

// A .pt2 archive written by torch.export.save: a zip whose records sit under one folder
// (ARCHIVE/archive_format holding "pt2", ARCHIVE/models/NAME.json, ARCHIVE/data/weights/...).
// Read through the one bounded zip reader (common/zip_archive), so a damaged file says what is
// wrong and a record cannot make it allocate more than the file holds.
class Pt2Archive {
public:
    // Throws torchscope::Error when the file cannot be opened as a zip.
    explicit Pt2Archive(const std::string& path);
    ~Pt2Archive();
    Pt2Archive(const Pt2Archive&) = delete;
    Pt2Archive& operator=(const Pt2Archive&) = delete;

    const std::string& path() const;
    uint64_t fileSize() const;
    // Names are relative to the archive's folder ("models/model.json").
    bool has(const std::string& name) const;
    // Throws torchscope::Error naming the record when it is missing or cannot be read whole.
    std::string read(const std::string& name) const;
    // The names under a folder ("models/"), relative to the archive's folder.
    std::vector<std::string> list(const std::string& folder) const;

private:
    std::unique_ptr<ZipArchive> zip_;
    std::string prefix_;
};

// Whether the file is a zip whose first folder holds archive_format = "pt2"; never throws.
bool isPt2Archive(const std::string& path);

} // namespace torchscope
