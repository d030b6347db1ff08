#pragma once
// One temporary file per fuzzing process, made by mkstemps under $TMPDIR (or /tmp): the code under
// test reads paths, so each input is written there first. Unique per process, so that parallel
// fuzz runs (ctest -j, -jobs=N) never share a file; removed at exit.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace torchscope::fuzz {

class TempFile {
public:
    explicit TempFile(const std::string& suffix)
    {
        const char* dir = std::getenv("TMPDIR");
        std::string pattern = std::string(dir && *dir ? dir : "/tmp") + "/torchscope-fuzz-XXXXXX" + suffix;
        const int fd = mkstemps(pattern.data(), static_cast<int>(suffix.size()));
        if (fd < 0) {
            std::perror(("torchscope fuzz: mkstemps " + pattern).c_str());
            std::abort();
        }
        close(fd);
        path_ = pattern;
    }
    ~TempFile() { std::remove(path_.c_str()); }
    TempFile(const TempFile&) = delete;
    TempFile& operator=(const TempFile&) = delete;

    // Replaces the file's content with the input; returns its path.
    const std::string& write(const uint8_t* data, size_t size)
    {
        std::FILE* out = std::fopen(path_.c_str(), "wb");
        if (!out || (size && std::fwrite(data, 1, size, out) != size) || std::fclose(out) != 0) {
            std::perror(("torchscope fuzz: writing " + path_).c_str());
            std::abort();
        }
        return path_;
    }

private:
    std::string path_;
};

} // namespace torchscope::fuzz
