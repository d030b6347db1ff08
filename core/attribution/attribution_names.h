#pragma once

// The attribution methods and faithfulness metrics by name, in one place: the CLI's choices and
// help, the window's lists, the table of analyses and the result files all read these. Torch-free.

#include <string>
#include <vector>

namespace torchscope {

struct NamedChoice {
    std::string name; // the CLI's word and the key in result files
    std::string about; // what it is, in the window's list
    std::string label; // short, for table headers and plots
    bool byDefault = false; // ticked in a fresh window
    bool layer = false; // methods: computed at a layer (a CAM)
    int better = 0; // metrics: -1 lower is better, +1 higher is better
};

// Every attribution method, the input methods first.
const std::vector<NamedChoice>& attributionMethodChoices();
// Every faithfulness metric (attribution/faithfulness.h).
const std::vector<NamedChoice>& faithfulnessMetricChoices();
// The names alone, in the same order.
std::vector<std::string> namesOf(const std::vector<NamedChoice>& choices);
// The entry named `name`, or nullptr.
const NamedChoice* findChoice(const std::vector<NamedChoice>& choices, const std::string& name);

} // namespace torchscope
