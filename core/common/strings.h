#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace torchscope {

std::vector<std::string> split(std::string_view text, char separator);
std::string join(const std::vector<std::string>& parts, std::string_view separator);
bool startsWith(std::string_view text, std::string_view prefix);
// Appends `item` unless the list holds it already (warnings repeated by every batch, said once).
void appendUnique(std::vector<std::string>& list, const std::string& item);
bool endsWith(std::string_view text, std::string_view suffix);
// The text up to its first line break (a message's headline).
std::string firstLine(const std::string& text);
bool contains(const std::vector<std::string>& list, std::string_view item);
// A module path is `ancestor` or a module inside it ("layer1.0" is within "layer1"; "" holds every path).
bool isWithin(std::string_view path, std::string_view ancestor);

// Edit distance, used to suggest the closest existing names for a misspelled one.
size_t levenshtein(std::string_view a, std::string_view b);
std::vector<std::string> closestMatches(
    const std::string& wanted, const std::vector<std::string>& candidates, size_t count);

// "[1, 64, 56, 56]"
std::string shapeToString(const std::vector<int64_t>& shape);

// The shortest text that reads back as the same double ("0.25", "1e-06", "0.12345678"): for keys and
// settings that must tell every value apart (a stream's 6 digits make 0.1234567 and 0.1234568 one).
std::string shortestNumber(double value);

} // namespace torchscope
