#pragma once

#include <cmath>
#include <cstdint>
#include <random>

namespace torchscope {

// Random numbers another language can reproduce exactly: std::mt19937's raw 32-bit words (NumPy's
// RandomState(seed) gives the same), turned into numbers by formulas written here, not by the
// standard library's distributions (whose algorithms are the implementation's choice).
class SeededRandom {
public:
    explicit SeededRandom(int64_t seed)
        : words_(static_cast<uint32_t>(seed))
    { }

    double uniform() { return (static_cast<double>(words_()) + 0.5) / 4294967296.0; } // (0, 1)
    double normal() // Box-Muller, one value from two words
    {
        const double u1 = uniform(), u2 = uniform();
        return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
    }
    int64_t integer(int64_t low, int64_t high) // in [low, high]
    {
        return low + static_cast<int64_t>(std::floor(uniform() * static_cast<double>(high - low + 1)));
    }

private:
    std::mt19937 words_;
};

} // namespace torchscope
