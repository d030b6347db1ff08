#include "common/strings.h"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <numeric>
#include <sstream>

namespace torchscope {

std::vector<std::string> split(std::string_view text, char separator)
{
    std::vector<std::string> parts;
    size_t start = 0;
    while (true) {
        const size_t end = text.find(separator, start);
        parts.emplace_back(text.substr(start, end - start));
        if (end == std::string_view::npos)
            return parts;
        start = end + 1;
    }
}

std::string join(const std::vector<std::string>& parts, std::string_view separator)
{
    std::string out;
    for (size_t i = 0; i < parts.size(); ++i) {
        if (i)
            out += separator;
        out += parts[i];
    }
    return out;
}

void appendUnique(std::vector<std::string>& list, const std::string& item)
{
    if (std::find(list.begin(), list.end(), item) == list.end())
        list.push_back(item);
}

bool startsWith(std::string_view text, std::string_view prefix)
{
    return text.substr(0, prefix.size()) == prefix;
}

std::string firstLine(const std::string& text)
{
    return text.substr(0, text.find('\n'));
}

bool contains(const std::vector<std::string>& list, std::string_view item)
{
    return std::find(list.begin(), list.end(), item) != list.end();
}

bool isWithin(std::string_view path, std::string_view ancestor)
{
    return ancestor.empty() || path == ancestor
        || (path.size() > ancestor.size() && startsWith(path, ancestor) && path[ancestor.size()] == '.');
}

bool endsWith(std::string_view text, std::string_view suffix)
{
    return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

size_t levenshtein(std::string_view a, std::string_view b)
{
    std::vector<size_t> row(b.size() + 1);
    std::iota(row.begin(), row.end(), 0);
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            const size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diagonal = above;
        }
    }
    return row[b.size()];
}

std::vector<std::string> closestMatches(
    const std::string& wanted, const std::vector<std::string>& candidates, size_t count)
{
    std::vector<std::pair<size_t, std::string>> scored;
    for (const auto& c : candidates)
        if (!c.empty())
            scored.emplace_back(levenshtein(wanted, c), c);
    std::stable_sort(scored.begin(), scored.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    std::vector<std::string> best;
    for (size_t i = 0; i < scored.size() && i < count; ++i)
        best.push_back(scored[i].second);
    return best;
}

std::string shapeToString(const std::vector<int64_t>& shape)
{
    std::ostringstream out;
    out << '[';
    for (size_t i = 0; i < shape.size(); ++i)
        out << (i ? ", " : "") << shape[i];
    out << ']';
    return out.str();
}

std::string shortestNumber(double value)
{
    char text[32];
    const auto end = std::to_chars(std::begin(text), std::end(text), value).ptr;
    return std::string(text, end);
}

} // namespace torchscope
