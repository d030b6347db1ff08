#include "exported/pt2_archive.h"

#include "common/error.h"
#include "common/strings.h"
#include "common/zip_archive.h"

#include <cctype>

namespace torchscope {

Pt2Archive::Pt2Archive(const std::string& path)
    : zip_(std::make_unique<ZipArchive>(path, ".pt2 archive"))
{
    const auto names = zip_->names();
    const std::string name = names.empty() ? "" : names.front();
    const auto slash = name.find('/');
    if (slash == std::string::npos)
        throw Error("'" + path + "' is a zip archive but not a .pt2: its first entry '" + name
            + "' is not inside an archive folder");
    prefix_ = name.substr(0, slash + 1);
}

Pt2Archive::~Pt2Archive() = default;

const std::string& Pt2Archive::path() const
{
    return zip_->path();
}

uint64_t Pt2Archive::fileSize() const
{
    return zip_->fileSize();
}

bool Pt2Archive::has(const std::string& name) const
{
    return zip_->has(prefix_ + name);
}

std::string Pt2Archive::read(const std::string& name) const
{
    return zip_->read(prefix_ + name);
}

std::vector<std::string> Pt2Archive::list(const std::string& folder) const
{
    std::vector<std::string> names;
    for (const auto& name : zip_->names())
        if (startsWith(name, prefix_ + folder))
            names.push_back(name.substr(prefix_.size()));
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
