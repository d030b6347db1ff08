#include "python_worker.h"

#include <sys/wait.h>
#include <unistd.h>

#include <stdexcept>

PythonWorker::PythonWorker(const std::vector<std::string>& command)
{
    int in[2], out[2];
    if (pipe(in) != 0 || pipe(out) != 0)
        throw std::runtime_error("pipe() failed");
    pid_ = fork();
    if (pid_ < 0)
        throw std::runtime_error("fork() failed");
    if (pid_ == 0) {
        dup2(in[0], STDIN_FILENO);
        dup2(out[1], STDOUT_FILENO);
        close(in[1]);
        close(out[0]);
        std::vector<char*> argv;
        for (const auto& part : command)
            argv.push_back(const_cast<char*>(part.c_str()));
        argv.push_back(nullptr);
        execv(argv[0], argv.data());
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    toChild_ = in[1];
    fromChild_ = out[0];
}

PythonWorker::~PythonWorker()
{
    if (toChild_ >= 0) {
        const std::string quit = "quit\n";
        (void)!write(toChild_, quit.data(), quit.size());
        close(toChild_);
    }
    if (fromChild_ >= 0)
        close(fromChild_);
    if (pid_ > 0)
        waitpid(pid_, nullptr, 0);
}

std::string PythonWorker::ask(const std::string& line)
{
    const std::string message = line + "\n";
    if (write(toChild_, message.data(), message.size()) != static_cast<ssize_t>(message.size()))
        throw std::runtime_error("the Python worker is gone");
    while (true) {
        const auto newline = buffer_.find('\n');
        if (newline != std::string::npos) {
            std::string answer = buffer_.substr(0, newline);
            buffer_.erase(0, newline + 1);
            return answer;
        }
        char chunk[4096];
        const ssize_t n = read(fromChild_, chunk, sizeof chunk);
        if (n <= 0)
            throw std::runtime_error("the Python worker exited (see its error above)");
        buffer_.append(chunk, static_cast<size_t>(n));
    }
}
