#pragma once

#include <string>
#include <vector>

// A child process spoken to line by line over pipes (the Python side of the benchmark).
class PythonWorker {
public:
    explicit PythonWorker(const std::vector<std::string>& command);
    ~PythonWorker();
    PythonWorker(const PythonWorker&) = delete;
    PythonWorker& operator=(const PythonWorker&) = delete;

    // Sends one line, returns the answer line. Throws std::runtime_error if the worker died.
    std::string ask(const std::string& line);

private:
    int pid_ = -1;
    int toChild_ = -1;
    int fromChild_ = -1;
    std::string buffer_;
};
