#pragma once

// The timing helpers the C++ benchmarks share: a pause, a timed call, the median, a --name value option.
#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

// Both sides run with OMP_WAIT_POLICY=PASSIVE (set by the bench targets) and a pause before each
// measured call, so that one process's spinning threads do not steal the other's cores.
inline void settle()
{
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

inline double seconds(const std::function<void()>& body)
{
    const auto start = std::chrono::steady_clock::now();
    body();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

inline double median(std::vector<double> values)
{
    std::sort(values.begin(), values.end());
    const size_t n = values.size();
    return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// Takes "--name value" out of args; the fallback when it is not there.
inline std::string option(std::vector<std::string>& args, const std::string& name, const std::string& fallback)
{
    const auto it = std::find(args.begin(), args.end(), name);
    if (it == args.end() || it + 1 == args.end())
        return fallback;
    const std::string value = *(it + 1);
    args.erase(it, it + 2);
    return value;
}
