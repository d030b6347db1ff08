#include "common/finite_summary.h"

#include <cmath>
#include <limits>

namespace torchscope {

FiniteSummary summariseFinite(const std::vector<double>& values)
{
    double sum = 0.0;
    int count = 0;
    for (double v : values)
        if (std::isfinite(v)) {
            sum += v;
            ++count;
        }
    if (count == 0)
        return {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::quiet_NaN(), 0};
    const double mean = sum / count;
    double squares = 0.0;
    for (double v : values)
        if (std::isfinite(v))
            squares += (v - mean) * (v - mean);
    return {mean, std::sqrt(squares / count), count};
}

} // namespace torchscope
