#include "graph/request.h"

#include "common/error.h"
#include "common/strings.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <sstream>

namespace torchscope {
namespace {

int64_t parseInteger(const std::string& text, const std::string& what)
{
    char* end = nullptr;
    errno = 0;
    const long long value = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || end != text.c_str() + text.size()) // also refuses an embedded NUL
        throw Error(what + ": '" + text + "' is not an integer");
    if (errno == ERANGE)
        throw Error(what + ": '" + text + "' is out of range");
    return value;
}

double parseNumber(const std::string& text, const std::string& what)
{
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size())
        throw Error(what + ": '" + text + "' is not a number");
    if (!std::isfinite(value))
        throw Error(what + ": '" + text + "' is not a finite number");
    return value;
}

// "0,5,7" or "0-3,9". No layer has a million channels: a longer list is a typo, not a request.
std::vector<int64_t> parseChannels(const std::string& text, const std::string& what)
{
    constexpr int64_t MostChannels = int64_t{1} << 20;
    std::vector<int64_t> channels;
    for (const auto& part : split(text, ',')) {
        const auto range = split(part, '-');
        if (range.size() == 2) {
            const int64_t first = parseInteger(range[0], what), last = parseInteger(range[1], what);
            if (first > last)
                throw Error(what + ": the channel range " + part + " is empty (it must be FIRST-LAST, FIRST <= LAST)");
            if (last - first >= MostChannels - static_cast<int64_t>(channels.size()))
                throw Error(what + ": " + part + " names more than " + std::to_string(MostChannels) + " channels");
            for (int64_t c = first; c <= last; ++c)
                channels.push_back(c);
        } else {
            channels.push_back(parseInteger(part, what));
        }
        if (static_cast<int64_t>(channels.size()) > MostChannels)
            throw Error(what + ": more than " + std::to_string(MostChannels) + " channels");
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
    else if (suffix == "attention")
        spec.kind = CaptureKind::Attention;
    else if (startsWith(suffix, "in") && suffix.size() > 2) {
        spec.kind = CaptureKind::Input;
        const int64_t index = parseInteger(suffix.substr(2), "grab '" + text + "'");
        if (index < 0 || index > 9999)
            throw Error("grab '" + text + "': input " + std::to_string(index) + " is not an input index (0, 1, ...)");
        spec.inputIndex = static_cast<int>(index);
    } else {
        throw Error("grab '" + text + "': unknown suffix ':" + suffix
            + "'; use PATH (output), PATH:in0, PATH:in1 ... (inputs), PATH:grad or PATH:attention");
    }
    spec.selector = text.substr(0, colon);
    if (spec.selector.empty())
        throw Error("grab '" + text + "' names no module");
    if (spec.selector.find(':', startsWith(spec.selector, "type:") ? 5 : 0) != std::string::npos)
        throw Error("grab '" + text
            + "': one suffix at most (PATH, PATH:in0, PATH:grad or PATH:attention); module paths have no ':'");
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
    case CaptureKind::Attention:
        return ":attention";
    }
    return "";
}

CaptureKey CaptureKey::parse(const std::string& text)
{
    CaptureKey key;
    key.path = text;
    std::string rest = text;
    if (const auto hash = rest.rfind('#'); hash != std::string::npos && hash + 1 < rest.size()
        && rest.find_first_not_of("0123456789", hash + 1) == std::string::npos && rest.size() - hash <= 6) {
        key.call = std::stoi(rest.substr(hash + 1));
        rest = rest.substr(0, hash);
    }
    key.path = rest;
    const auto colon = rest.rfind(':');
    if (colon == std::string::npos || colon == 0)
        return key;
    const std::string suffix = rest.substr(colon + 1);
    if (suffix == "grad") {
        key.kind = CaptureKind::Gradient;
    } else if (suffix == "attention") {
        key.kind = CaptureKind::Attention;
    } else if (startsWith(suffix, "in") && suffix.size() > 2 && suffix.size() <= 6
        && suffix.find_first_not_of("0123456789", 2) == std::string::npos) {
        key.kind = CaptureKind::Input;
        key.inputIndex = std::stoi(suffix.substr(2));
    } else {
        return key; // "probe:NAME": a name, not a capture of a module
    }
    key.path = rest.substr(0, colon);
    return key;
}

std::string CaptureKey::grab() const
{
    GrabSpec spec;
    spec.kind = kind;
    spec.inputIndex = inputIndex;
    return path + spec.suffix();
}

std::string CaptureKey::format() const
{
    return call == 0 ? grab() : grab() + "#" + std::to_string(call);
}

EditSpec EditSpec::parse(const std::string& text)
{
    const auto parts = split(text, ':');
    const std::string what = "edit '" + text + "'";
    const std::string usage = "; use PATH:zero:C1,C2, PATH:scale:C1,C2:FACTOR, PATH:add, PATH:replace or "
                              "PATH:sae:DIR:ablate:L1,L2 | scale:L1,L2:FACTOR | steer:L1,L2:AMOUNT";
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
    } else if (op == "sae" && parts.size() >= 5 && !parts[2].empty()) {
        spec.kind = EditKind::SaeLatents;
        spec.sae = parts[2];
        spec.latentOp = parts[3];
        spec.channels = parseChannels(parts[4], what);
        if (spec.latentOp == "ablate" && parts.size() == 5)
            spec.factor = 0.0;
        else if ((spec.latentOp == "scale" || spec.latentOp == "steer") && parts.size() == 6)
            spec.factor = parseNumber(parts[5], what);
        else
            throw Error(what + " is not understood" + usage);
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
        out << ":scale:" << join(channelText, ",") << ':' << shortestNumber(factor);
        break;
    case EditKind::Add:
        out << ":add";
        break;
    case EditKind::Replace:
        out << ":replace";
        break;
    case EditKind::SaeLatents:
        out << ":sae:" << sae << ':' << latentOp << ':' << join(channelText, ",");
        if (latentOp != "ablate")
            out << ':' << shortestNumber(factor);
        break;
    }
    return out.str();
}

std::string EditSpec::cacheKey() const
{
    if (kind != EditKind::SaeLatents)
        return toString();
    std::ostringstream out;
    out << toString() << "#k=" << saeK << ",t=" << shortestNumber(saeThreshold) << ",p=" << positions
        << ",prefix=" << prefixTokens;
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
