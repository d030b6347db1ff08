#include "model/batch_limit.h"

#include "model/model.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <string>

namespace torchscope {
namespace {

bool allDigits(const std::string& text)
{
    if (text.empty())
        return false;
    for (char c : text)
        if (!std::isdigit(static_cast<unsigned char>(c)))
            return false;
    return true;
}

} // namespace

int64_t largestBatch(const Model& model)
{
    constexpr int64_t Unbounded = std::numeric_limits<int64_t>::max();
    const auto& program = model.exportedProgram();
    if (!program || program->inputs.empty())
        return Unbounded;
    // ExportedProgramInfo's own words: "NAME: DTYPE[D0, D1, ...]" and "SYMBOL in [LOW, HIGH|inf]".
    const std::string& input = program->inputs.front();
    const auto open = input.find('[');
    if (open == std::string::npos)
        return Unbounded;
    const auto end = input.find_first_of(",]", open + 1);
    if (end == std::string::npos)
        return Unbounded;
    const std::string first = input.substr(open + 1, end - open - 1);
    if (allDigits(first))
        return std::max<int64_t>(1, std::stoll(first));
    const std::string prefix = first + " in [";
    for (const auto& range : program->dynamicDimensions) {
        if (range.rfind(prefix, 0) != 0)
            continue;
        const auto comma = range.find(", ", prefix.size());
        const auto close = range.find(']', prefix.size());
        if (comma == std::string::npos || close == std::string::npos || close < comma)
            return Unbounded;
        const std::string high = range.substr(comma + 2, close - comma - 2);
        return allDigits(high) ? std::max<int64_t>(1, std::stoll(high)) : Unbounded;
    }
    return Unbounded;
}

int64_t batchUnderCap(const Model& model, int64_t memoryBytes, int64_t bytesPerSample, int64_t useful)
{
    const int64_t fits = memoryBytes / std::max<int64_t>(1, bytesPerSample);
    return std::clamp<int64_t>(std::min(fits, largestBatch(model)), 1, std::max<int64_t>(1, useful));
}

int64_t recordedBytesPerSample(const Model& model, int64_t inputValues)
{
    int64_t values = inputValues;
    bool recorded = false;
    for (const auto& m : model.modules())
        if (!m.path.empty()) // the root's output is counted by its last module's
            for (const auto& shape : m.outputShapes) {
                int64_t n = 1;
                for (size_t d = 1; d < shape.size(); ++d) // without the batch dimension
                    n *= std::max<int64_t>(1, shape[d]);
                values += n;
                recorded = true;
            }
    return recorded ? 2 * values * static_cast<int64_t>(sizeof(float)) : 0;
}

} // namespace torchscope
