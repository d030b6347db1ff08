#pragma once

// A number for a JSON file that Python reads: NaN and infinities (no JSON number) as null.

#include <nlohmann/json.hpp>

#include <cmath>

namespace torchscope {

inline nlohmann::json jsonNumber(double value)
{
    return std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(nullptr);
}

} // namespace torchscope
