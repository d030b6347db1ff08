#include "common/atomic_file.h"

#include "common/error.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace torchscope {

namespace {

std::string temporaryPathBeside(const std::string& path)
{
    namespace fs = std::filesystem;
    const fs::path target(path);
    const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
        throw Error("cannot write '" + path + "': the folder '" + dir.string() + "' does not exist");
    return (dir / ("." + target.filename().string() + ".XXXXXX")).string();
}

// What a new file gets from open(2): 0666 less the user's umask (read from /proc, because
// umask(2) can only be read by changing it, which races with other threads creating files).
mode_t normalFileMode()
{
    static const mode_t mode = [] {
        mode_t mask = 022;
        std::ifstream status("/proc/self/status");
        for (std::string line; std::getline(status, line);)
            if (line.rfind("Umask:", 0) == 0)
                mask = static_cast<mode_t>(std::stoul(line.substr(6), nullptr, 8));
        return static_cast<mode_t>(0666 & ~mask);
    }();
    return mode;
}

} // namespace

void replaceFileAtomically(const std::string& path, const std::function<void(const std::string& tempPath)>& write)
{
    std::string temp = temporaryPathBeside(path);
    const int fd = mkstemp(temp.data());
    if (fd < 0)
        throw Error("cannot write '" + path + "': " + std::strerror(errno));
    ::close(fd);
    try {
        write(temp);
    } catch (const std::exception& e) {
        std::remove(temp.c_str());
        throw Error("cannot write '" + path + "': " + e.what());
    }
    ::chmod(temp.c_str(), normalFileMode()); // mkstemp made it 0600
    if (std::rename(temp.c_str(), path.c_str()) != 0) {
        const std::string why = std::strerror(errno);
        std::remove(temp.c_str());
        throw Error("cannot write '" + path + "': " + why);
    }
}

void writeFileAtomically(const std::string& path, std::string_view bytes)
{
    std::string temp = temporaryPathBeside(path);
    const int fd = mkstemp(temp.data());
    if (fd < 0)
        throw Error("cannot write '" + path + "': " + std::strerror(errno));
    size_t written = 0;
    while (written < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
        if (n < 0) {
            const std::string why = std::strerror(errno);
            ::close(fd);
            std::remove(temp.c_str());
            throw Error("cannot write '" + path + "': " + why);
        }
        written += static_cast<size_t>(n);
    }
    const bool synced = ::fsync(fd) == 0;
    ::fchmod(fd, normalFileMode()); // mkstemp made it 0600
    if (::close(fd) != 0 || !synced || std::rename(temp.c_str(), path.c_str()) != 0) {
        const std::string why = std::strerror(errno);
        std::remove(temp.c_str());
        throw Error("cannot write '" + path + "': " + why);
    }
}

} // namespace torchscope
