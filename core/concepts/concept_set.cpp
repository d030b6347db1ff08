#include "concepts/concept_set.h"

#include "common/error.h"
#include "common/strings.h"
#include "imaging/image_decoder.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace torchscope {

namespace fs = std::filesystem;

namespace {

std::string stem(const fs::path& path)
{
    return path.stem().string();
}

std::vector<std::string> subfolders(const fs::path& root)
{
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(root, ec))
        if (entry.is_directory() && entry.path().filename().string().front() != '.')
            out.push_back(entry.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
}

// One CSV line split at commas outside double quotes (Broden's label.csv quotes its synonyms).
std::vector<std::string> csvFields(const std::string& line)
{
    std::vector<std::string> fields(1);
    bool quoted = false;
    for (const char c : line) {
        if (c == '"')
            quoted = !quoted;
        else if (c == ',' && !quoted)
            fields.emplace_back();
        else if (c != '\r')
            fields.back() += c;
    }
    return fields;
}

std::vector<std::vector<std::string>> readCsv(const fs::path& path)
{
    std::ifstream in(path);
    if (!in)
        throw Error("cannot read '" + path.string() + "'");
    std::vector<std::vector<std::string>> rows;
    std::string line;
    while (std::getline(in, line))
        if (!line.empty() && line != "\r")
            rows.push_back(csvFields(line));
    return rows;
}

// concepts.csv: concept,category rows (a header row "concept,category" allowed).
std::map<std::string, std::string> readCategories(const fs::path& root)
{
    std::map<std::string, std::string> out;
    const fs::path file = root / "concepts.csv";
    if (!fs::exists(file))
        return out;
    for (const auto& row : readCsv(file)) {
        if (row.size() < 2)
            throw Error("'" + file.string() + "' has a line without a category: '" + join(row, ",")
                + "'; each line is concept,category");
        if (row[0] == "concept" && row[1] == "category")
            continue;
        out[row[0]] = row[1];
    }
    return out;
}

int32_t addCategory(ConceptSet& set, const std::string& category)
{
    const auto it = std::find(set.categories.begin(), set.categories.end(), category);
    if (it != set.categories.end())
        return static_cast<int32_t>(it - set.categories.begin());
    set.categories.push_back(category);
    return static_cast<int32_t>(set.categories.size() - 1);
}

void nameConcepts(ConceptSet& set, const std::vector<std::string>& names, const fs::path& root)
{
    const auto categories = readCategories(root);
    for (const auto& name : names) {
        const auto it = categories.find(name);
        const std::string category = it == categories.end() ? "concept" : it->second;
        addCategory(set, category);
        set.concepts.push_back({name, category});
    }
    for (const auto& [name, category] : categories)
        if (std::find(names.begin(), names.end(), name) == names.end())
            set.warnings.push_back("concepts.csv names '" + name + "', which has no folder in '" + root.string() + "'");
}

void everyCategory(ConceptSet& set)
{
    for (auto& image : set.images) {
        image.categories.clear();
        for (size_t c = 0; c < set.categories.size(); ++c)
            image.categories.push_back(static_cast<int32_t>(c));
    }
}

void readMasksLayout(ConceptSet& set, const fs::path& root)
{
    set.layout = "masks";
    set.pixelLevel = true;
    const std::vector<std::string> names = subfolders(root / "masks");
    nameConcepts(set, names, root);
    std::map<std::string, size_t> byName;
    for (const auto& path : listImages((root / "images").string())) {
        const std::string name = stem(path);
        if (byName.count(name))
            throw Error("'" + (root / "images").string() + "' has two images named '" + name
                + "' (a mask names its image by the file name without its extension)");
        byName[name] = set.images.size();
        set.images.push_back({path, name, {}, {}, {}, {}, {}, 0, 0});
    }
    for (size_t c = 0; c < names.size(); ++c)
        for (const auto& path : listImages((root / "masks" / names[c]).string())) {
            const auto it = byName.find(stem(path));
            if (it == byName.end())
                throw Error("the mask '" + path + "' has no image '" + stem(path) + ".*' in '"
                    + (root / "images").string() + "'");
            ConceptImage& image = set.images[it->second];
            image.masks.push_back({static_cast<int32_t>(c), path});
            image.concepts.push_back(static_cast<int32_t>(c));
        }
    everyCategory(set);
}

void readFoldersLayout(ConceptSet& set, const fs::path& root)
{
    set.layout = "folders";
    const std::vector<std::string> names = subfolders(root);
    nameConcepts(set, names, root);
    std::map<std::string, size_t> byName;
    for (size_t c = 0; c < names.size(); ++c)
        for (const auto& path : listImages((root / names[c]).string())) {
            const std::string name = fs::path(path).filename().string();
            auto it = byName.find(name);
            if (it == byName.end()) {
                it = byName.emplace(name, set.images.size()).first;
                set.images.push_back({path, name, {}, {}, {}, {}, {}, 0, 0});
            }
            set.images[it->second].concepts.push_back(static_cast<int32_t>(c));
        }
    everyCategory(set);
}

int64_t wholeNumber(const std::string& text, const fs::path& file, const std::string& what)
{
    try {
        size_t used = 0;
        const int64_t value = std::stoll(text, &used);
        if (used == text.size() && value >= 0)
            return value;
    } catch (const std::exception&) { }
    throw Error("'" + file.string() + "' has " + what + " '" + text + "', which is not a whole number");
}

// NetDissect's Broden: label.csv names the labels and counts them per category ("object(12);part(3)"):
// a label's category is the one it is counted most in, as NetDissect's primary category.
void readBrodenLayout(ConceptSet& set, const fs::path& root)
{
    set.layout = "broden";
    set.pixelLevel = true;
    const fs::path labelFile = root / "label.csv", indexFile = root / "index.csv";
    const auto labels = readCsv(labelFile);
    if (labels.empty() || labels[0].size() < 3 || labels[0][0] != "number" || labels[0][1] != "name")
        throw Error(
            "'" + labelFile.string() + "' is not Broden's label.csv: its first line is not number,name,category,...");
    for (size_t r = 1; r < labels.size(); ++r) {
        const auto& row = labels[r];
        if (row.size() < 3)
            throw Error("'" + labelFile.string() + "' line " + std::to_string(r + 1) + " has no category");
        const int64_t number = wholeNumber(row[0], labelFile, "the label number");
        if (number == 0)
            continue; // "-": unlabelled
        if (number > 1'000'000)
            throw Error("'" + labelFile.string() + "' has the label number " + row[0] + ", beyond the 1,000,000 read");
        std::string best;
        int64_t most = -1;
        for (const auto& part : split(row[2], ';')) {
            const auto open = part.find('(');
            const std::string name = part.substr(0, open);
            const int64_t count = open == std::string::npos
                ? 0
                : wholeNumber(part.substr(open + 1, part.size() - open - 2), labelFile, "the count");
            if (!name.empty() && count > most) {
                best = name;
                most = count;
            }
        }
        if (best.empty())
            throw Error("'" + labelFile.string() + "' line " + std::to_string(r + 1) + " gives the label '" + row[1]
                + "' no category");
        if (set.conceptOfLabel.size() <= static_cast<size_t>(number))
            set.conceptOfLabel.resize(static_cast<size_t>(number) + 1, -1);
        set.conceptOfLabel[static_cast<size_t>(number)] = static_cast<int32_t>(set.concepts.size());
        addCategory(set, best);
        set.concepts.push_back({row[1], best});
    }
    const auto index = readCsv(indexFile);
    if (index.empty())
        throw Error("'" + indexFile.string() + "' is empty");
    const auto& header = index[0];
    const auto column = [&](const std::string& name) -> int {
        const auto it = std::find(header.begin(), header.end(), name);
        return it == header.end() ? -1 : static_cast<int>(it - header.begin());
    };
    const int imageColumn = column("image"), sh = column("sh"), sw = column("sw");
    if (imageColumn < 0 || sh < 0 || sw < 0)
        throw Error("'" + indexFile.string() + "' is not Broden's index.csv: it has no image, sh or sw column");
    for (size_t r = 1; r < index.size(); ++r) {
        const auto& row = index[r];
        if (row.size() != header.size())
            throw Error("'" + indexFile.string() + "' line " + std::to_string(r + 1) + " has "
                + std::to_string(row.size()) + " fields, its header " + std::to_string(header.size()));
        ConceptImage image;
        image.path = (root / "images" / row[static_cast<size_t>(imageColumn)]).string();
        image.name = row[static_cast<size_t>(imageColumn)];
        image.maskHeight = wholeNumber(row[static_cast<size_t>(sh)], indexFile, "the segmentation height");
        image.maskWidth = wholeNumber(row[static_cast<size_t>(sw)], indexFile, "the segmentation width");
        if (image.maskHeight < 1 || image.maskWidth < 1 || image.maskHeight > 16384 || image.maskWidth > 16384)
            throw Error("'" + indexFile.string() + "' line " + std::to_string(r + 1) + " gives a segmentation of "
                + std::to_string(image.maskHeight) + " x " + std::to_string(image.maskWidth));
        std::set<int32_t> annotated;
        for (size_t c = 0; c < header.size(); ++c) {
            if (static_cast<int>(c) == imageColumn || header[c] == "split" || header[c] == "ih" || header[c] == "iw"
                || static_cast<int>(c) == sh || static_cast<int>(c) == sw || row[c].empty())
                continue;
            const int32_t category = addCategory(set, header[c]);
            annotated.insert(category);
            for (const auto& item : split(row[c], ';')) {
                if (item.empty())
                    continue;
                if (hasImageExtension(item)) {
                    image.segmentations.push_back((root / "images" / item).string());
                    continue;
                }
                const int64_t number = wholeNumber(item, indexFile, "the label");
                const int32_t conceptId = static_cast<size_t>(number) < set.conceptOfLabel.size()
                    ? set.conceptOfLabel[static_cast<size_t>(number)]
                    : -1;
                if (conceptId < 0)
                    throw Error("'" + indexFile.string() + "' line " + std::to_string(r + 1) + " has the label " + item
                        + ", which label.csv does not name");
                image.wholeImage.push_back(conceptId);
                image.concepts.push_back(conceptId);
            }
        }
        image.categories.assign(annotated.begin(), annotated.end());
        set.images.push_back(std::move(image));
    }
}

} // namespace

int32_t ConceptSet::categoryOf(int32_t conceptId) const
{
    const auto& name = concepts.at(static_cast<size_t>(conceptId)).category;
    return static_cast<int32_t>(std::find(categories.begin(), categories.end(), name) - categories.begin());
}

ConceptSet readConceptSet(const std::string& root, int64_t maxImages)
{
    const fs::path dir(root);
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
        throw Error("the concept set '" + root + "' is not a folder");
    ConceptSet set;
    set.root = root;
    if (fs::exists(dir / "index.csv") && fs::exists(dir / "label.csv"))
        readBrodenLayout(set, dir);
    else if (fs::is_directory(dir / "images") && fs::is_directory(dir / "masks"))
        readMasksLayout(set, dir);
    else if (fs::is_directory(dir / "images") || fs::is_directory(dir / "masks"))
        throw Error("the concept set '" + root + "' has " + (fs::is_directory(dir / "images") ? "images/" : "masks/")
            + " but no " + (fs::is_directory(dir / "images") ? "masks/" : "images/")
            + ": a pixel-level set has both (images/NAME.jpg, masks/CONCEPT/NAME.png)");
    else
        readFoldersLayout(set, dir);
    std::sort(set.images.begin(), set.images.end(),
        [](const ConceptImage& a, const ConceptImage& b) { return a.name < b.name; });
    for (auto& image : set.images)
        std::sort(image.concepts.begin(), image.concepts.end());
    if (maxImages > 0 && static_cast<int64_t>(set.images.size()) > maxImages)
        set.images.resize(static_cast<size_t>(maxImages));
    if (set.concepts.size() < 2) {
        std::string holds = set.concepts.empty() ? "no concept" : "one concept ('" + set.concepts[0].name + "')";
        throw Error("the concept set '" + root + "' (" + set.layout + " layout) has " + holds
            + ": a unit's concepts are told apart from the rest, so a set needs at least two (a folder per concept, "
              "or masks/CONCEPT/ folders beside images/)");
    }
    if (set.images.empty())
        throw Error("the concept set '" + root + "' (" + set.layout + " layout) has no images");
    return set;
}

} // namespace torchscope
