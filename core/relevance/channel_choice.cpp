// ChannelChoice and the reference modes (relevance/concept_relevance.h): in the core library, so that
// the CLI parses --channels and --reference-by in a build without image files.
#include "relevance/concept_relevance.h"

#include "common/error.h"
#include "common/strings.h"

#include <algorithm>

namespace torchscope {

ChannelChoice ChannelChoice::parse(const std::string& text)
{
    ChannelChoice choice;
    const auto number = [&](const std::string& part) {
        try {
            size_t used = 0;
            const long long value = std::stoll(part, &used);
            if (used == part.size() && value >= 0)
                return static_cast<int64_t>(value);
        } catch (const std::exception&) { }
        throw Error("--channels takes top:K or channel indices separated by commas (1,5,9); '" + part + "' in '" + text
            + "' is not a non-negative integer");
    };
    if (startsWith(text, "top:")) {
        choice.top = number(text.substr(4));
        if (choice.top == 0)
            throw Error("--channels top:K needs K of at least 1, got '" + text + "'");
        return choice;
    }
    for (std::string part : split(text, ',')) {
        part.erase(std::remove(part.begin(), part.end(), ' '), part.end());
        choice.channels.push_back(number(part));
    }
    if (choice.channels.empty())
        throw Error("--channels takes top:K or channel indices separated by commas (1,5,9), got nothing");
    return choice;
}

std::string ChannelChoice::toString() const
{
    if (channels.empty())
        return "top:" + std::to_string(top);
    std::vector<std::string> parts;
    for (const int64_t c : channels)
        parts.push_back(std::to_string(c));
    return join(parts, ",");
}

const std::vector<std::string>& referenceModes()
{
    static const std::vector<std::string> modes{"relevance", "activation"};
    return modes;
}

} // namespace torchscope
