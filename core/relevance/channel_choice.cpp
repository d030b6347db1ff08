// ChannelChoice, the reference modes and the request's parameters (relevance/concept_relevance.h): in
// the core library, so that the CLI parses crp's options in a build without image files.
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

void ConceptRelevanceRequest::visit(ParameterVisitor& v)
{
    v.visit(Parameter("layer", "the module whose channels are measured").needed(), layer);
    v.visit(
        Parameter("target", "the class explained; default: each image's predicted class").atLeast(-1).defaultNotShown(),
        targetClass);
    v.visit(Parameter("channels", "top:K (each image's K most relevant channels) or channel indices (1,5,9)"),
        textField(channels));
    visitLrpChoices(v, composite, attentionRule);
    v.visit(ruleOverrideParameter(), relevanceRules);
    v.visit(Parameter("references", "a folder of images: each chosen channel's top images").folder(), referenceFolder);
    v.visit(Parameter("top", "references per channel").range(1, 10000), top);
    v.visit(
        Parameter("reference_by", "relevance (RelMax) or activation (ActMax)").oneOf(referenceModes()), referenceBy);
    v.visit(Parameter("memory_mb",
                "the memory one batch of images may take (default: a quarter of the memory "
                "available)")
                .range(0, double(int64_t{1} << 30))
                .defaultNotShown(),
        memoryMb);
}

} // namespace torchscope
