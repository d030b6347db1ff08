#include "graph/request.h"

#include "common/error.h"
#include "common/strings.h"

#include <cstdlib>
#include <sstream>

namespace torchscope {
namespace {

int64_t parseInteger(const std::string& text, const std::string& what)
{
    char* end = nullptr;
    const long long value = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0')
        throw Error(what + ": '" + text + "' is not an integer");
    return value;
}

double parseNumber(const std::string& text, const std::string& what)
{
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0')
        throw Error(what + ": '" + text + "' is not a number");
    return value;
}

std::vector<int64_t> parseChannels(const std::string& text, const std::string& what)
{
    std::vector<int64_t> channels;
    for (const auto& part : split(text, ',')) {
        const auto range = split(part, '-');
        if (range.size() == 2) {
            const int64_t first = parseInteger(range[0], what), last = parseInteger(range[1], what);
            for (int64_t c = first; c <= last; ++c)
                channels.push_back(c);
        } else {
            channels.push_back(parseInteger(part, what));
        }
    }
    for (auto c : channels)
        if (c < 0)
            throw Error(what + ": channel " + std::to_string(c) + " is negative");
    return channels;
}

} // namespace

GrabSpec GrabSpec::parse(const std::string& text)
{
    GrabSpec spec;
    spec.selector = text;
    const auto colon = text.rfind(':');
    if (colon == std::string::npos || (startsWith(text, "type:") && colon == 4))
        return spec;
    const std::string suffix = text.substr(colon + 1);
    if (suffix == "grad" || suffix == "out")
        spec.kind = suffix == "grad" ? CaptureKind::Gradient : CaptureKind::Output;
    else if (startsWith(suffix, "in") && suffix.size() > 2) {
        spec.kind = CaptureKind::Input;
        spec.inputIndex = static_cast<int>(parseInteger(suffix.substr(2), "grab '" + text + "'"));
    } else {
        throw Error("grab '" + text + "': unknown suffix ':" + suffix
            + "'; use PATH (output), PATH:in0, PATH:in1 ... (inputs) or PATH:grad");
    }
    spec.selector = text.substr(0, colon);
    if (spec.selector.empty())
        throw Error("grab '" + text + "' names no module");
    return spec;
}

std::string GrabSpec::suffix() const
{
    switch (kind) {
    case CaptureKind::Output:
        return "";
    case CaptureKind::Input:
        return ":in" + std::to_string(inputIndex);
    case CaptureKind::Gradient:
        return ":grad";
    }
    return "";
}

EditSpec EditSpec::parse(const std::string& text)
{
    const auto parts = split(text, ':');
    const std::string what = "edit '" + text + "'";
    const std::string usage = "; use PATH:zero:C1,C2, PATH:scale:C1,C2:FACTOR, PATH:add or PATH:replace";
    if (parts.size() < 2 || parts[0].empty())
        throw Error(what + " is incomplete" + usage);
    EditSpec spec;
    spec.path = parts[0];
    const std::string& op = parts[1];
    if (op == "zero" && parts.size() == 3) {
        spec.kind = EditKind::ZeroChannels;
        spec.channels = parseChannels(parts[2], what);
    } else if (op == "scale" && parts.size() == 4) {
        spec.kind = EditKind::ScaleChannels;
        spec.channels = parseChannels(parts[2], what);
        spec.factor = parseNumber(parts[3], what);
    } else if ((op == "add" || op == "replace") && parts.size() == 2) {
        spec.kind = op == "add" ? EditKind::Add : EditKind::Replace;
    } else {
        throw Error(what + " is not understood" + usage);
    }
    return spec;
}

std::string EditSpec::toString() const
{
    std::vector<std::string> channelText;
    for (auto c : channels)
        channelText.push_back(std::to_string(c));
    std::ostringstream out;
    out << path;
    switch (kind) {
    case EditKind::ZeroChannels:
        out << ":zero:" << join(channelText, ",");
        break;
    case EditKind::ScaleChannels:
        out << ":scale:" << join(channelText, ",") << ':' << factor;
        break;
    case EditKind::Add:
        out << ":add";
        break;
    case EditKind::Replace:
        out << ":replace";
        break;
    }
    return out.str();
}

void Request::grabOutput(const std::string& path)
{
    for (const auto& g : grabs)
        if (g.selector == path && g.kind == CaptureKind::Output)
            return;
    grabs.push_back(GrabSpec{path, CaptureKind::Output, 0});
}

} // namespace torchscope
