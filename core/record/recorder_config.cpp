#include "record/recorder_config.h"

#include "common/error.h"
#include "common/strings.h"

#include <cstdlib>

namespace torchscope {

Reduction parseReduction(const std::string& text)
{
    if (text == "none")
        return Reduction::None;
    if (text == "sum")
        return Reduction::Sum;
    if (text == "mean")
        return Reduction::Mean;
    if (text == "max")
        return Reduction::Max;
    if (text == "min")
        return Reduction::Min;
    if (text == "stats")
        return Reduction::Stats;
    throw Error("unknown reduction '" + text + "'; use none, sum, mean, max, min or stats");
}

std::string toString(Reduction reduction)
{
    switch (reduction) {
    case Reduction::None:
        return "none";
    case Reduction::Sum:
        return "sum";
    case Reduction::Mean:
        return "mean";
    case Reduction::Max:
        return "max";
    case Reduction::Min:
        return "min";
    case Reduction::Stats:
        return "stats";
    }
    return "";
}

Condition Condition::parse(const std::string& text)
{
    Condition condition;
    const auto colon = text.find(':');
    const std::string kind = text.substr(0, colon);
    if (kind == "all" || kind == "correct" || kind == "wrong") {
        if (colon != std::string::npos)
            throw Error("condition '" + text + "' takes no labels");
        condition.kind = kind == "all" ? Kind::All : kind == "correct" ? Kind::Correct : Kind::Wrong;
        return condition;
    }
    if ((kind != "true" && kind != "predicted") || colon == std::string::npos)
        throw Error("unknown condition '" + text + "'; use all, true:L1,L2, predicted:L1,L2, correct or wrong");
    condition.kind = kind == "true" ? Kind::TrueLabelIn : Kind::PredictedIn;
    for (const auto& part : split(text.substr(colon + 1), ',')) {
        char* end = nullptr;
        const long long label = std::strtoll(part.c_str(), &end, 10);
        if (part.empty() || *end != '\0' || label < 0)
            throw Error("condition '" + text + "': '" + part + "' is not a class index");
        condition.labels.insert(label);
    }
    return condition;
}

} // namespace torchscope
