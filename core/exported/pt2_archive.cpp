#include "exported/pt2_archive.h"

#include "common/error.h"
#include "common/strings.h"

#include <zip.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace torchscope {

struct Pt2Archive::Zip {
    zip_t* handle = nullptr;
    ~Zip()
    {
        if (handle)
            zip_discard(handle);
    }
};

Pt2Archive::Pt2Archive(const std::string& path)
    : path_(path)
    , zip_(std::make_unique<Zip>())
{
    std::error_code sizeError;
    fileSize_ = std::filesystem::file_size(path, sizeError);
    int error = 0;
    zip_->handle = zip_open(path.c_str(), ZIP_RDONLY, &error);
    if (!zip_->handle) {
        zip_error_t details;
        zip_error_init_with_code(&details, error);
        const std::string why = zip_error_strerror(&details);
        zip_error_fini(&details);
        throw Error("'" + path + "' cannot be opened as a zip archive (" + why + ")");
    }
    const char* first = zip_get_num_entries(zip_->handle, 0) > 0 ? zip_get_name(zip_->handle, 0, 0) : nullptr;
    const std::string name = first ? first : "";
    const auto slash = name.find('/');
    if (slash == std::string::npos)
        throw Error("'" + path + "' is a zip archive but not a .pt2: its first entry '" + name
            + "' is not inside an archive folder");
    prefix_ = name.substr(0, slash + 1);
}

Pt2Archive::~Pt2Archive() = default;

bool Pt2Archive::has(const std::string& name) const
{
    return zip_name_locate(zip_->handle, (prefix_ + name).c_str(), 0) >= 0;
}

std::string Pt2Archive::read(const std::string& name) const
{
    const std::string full = prefix_ + name;
    zip_stat_t stat;
    if (zip_stat(zip_->handle, full.c_str(), 0, &stat) != 0 || !(stat.valid & ZIP_STAT_SIZE))
        throw Error("the .pt2 archive has no record '" + full + "'");
    zip_file_t* file = zip_fopen(zip_->handle, full.c_str(), 0);
    if (!file)
        throw Error("the .pt2 archive's record '" + full + "' cannot be opened: " + zip_strerror(zip_->handle));
    // Read in pieces rather than trusting the declared size: a damaged header can claim gigabytes.
    std::string bytes;
    bytes.reserve(static_cast<size_t>(std::min<zip_uint64_t>(stat.size, fileSize_)));
    char piece[1 << 16];
    zip_int64_t read = 0;
    while (bytes.size() <= stat.size && (read = zip_fread(file, piece, sizeof piece)) > 0)
        bytes.append(piece, static_cast<size_t>(read));
    zip_fclose(file);
    if (read < 0 || bytes.size() != stat.size)
        throw Error("the .pt2 archive's record '" + full + "' is damaged (" + std::to_string(bytes.size()) + " of "
            + std::to_string(stat.size) + " bytes could be read)");
    return bytes;
}

std::vector<std::string> Pt2Archive::list(const std::string& folder) const
{
    std::vector<std::string> names;
    const zip_int64_t count = zip_get_num_entries(zip_->handle, 0);
    for (zip_int64_t i = 0; i < count; ++i)
        if (const char* entry = zip_get_name(zip_->handle, static_cast<zip_uint64_t>(i), 0)) {
            const std::string name = entry;
            if (startsWith(name, prefix_ + folder))
                names.push_back(name.substr(prefix_.size()));
        }
    return names;
}

bool isPt2Archive(const std::string& path)
{
    try {
        const Pt2Archive archive(path);
        if (!archive.has("archive_format"))
            return false;
        std::string format = archive.read("archive_format");
        while (!format.empty() && std::isspace(static_cast<unsigned char>(format.back())))
            format.pop_back();
        return format == "pt2";
    } catch (const Error&) {
        return false;
    }
}

} // namespace torchscope
