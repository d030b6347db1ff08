#include "exported/call_tree.h"

#include "common/strings.h"
#include "exported/node_emitter.h"

#include <algorithm>
#include <climits>
#include <map>

namespace torchscope {

namespace ex = torch::_export;

namespace {

struct StackEntry {
    std::string key, path, type;
};

// "L__self__,,pkg.Net;L__self___fc,fc,torch.nn.modules.linear.Linear": key, path, type per entry.
// Entries that do not nest under the previous one (a module reached through another's attribute)
// are left out, so every call sits inside its parent module's call.
std::vector<StackEntry> moduleStack(
    const std::string& text, const std::set<std::string>& modules, std::string& rootType)
{
    std::vector<StackEntry> stack;
    std::string previous;
    for (const auto& entry : split(text, ';')) {
        const auto first = entry.find(',');
        const auto last = entry.rfind(',');
        if (first == std::string::npos || last == first)
            continue;
        StackEntry e{entry.substr(0, first), entry.substr(first + 1, last - first - 1), entry.substr(last + 1)};
        if (e.path.empty()) {
            rootType = e.type;
            continue;
        }
        if (e.path == previous || !isWithin(e.path, previous) || (!modules.empty() && !modules.count(e.path)))
            continue;
        previous = e.path;
        stack.push_back(std::move(e));
    }
    return stack;
}

void collect(const ex::Node& node, std::vector<std::string>& uses, std::vector<std::string>& defines)
{
    for (const auto& input : node.get_inputs())
        forEachValueName(input.get_arg(), [&](const std::string& name) { uses.push_back(name); });
    for (const auto& output : node.get_outputs())
        forEachValueName(output, [&](const std::string& name) { defines.push_back(name); });
}

struct Analysis {
    std::vector<std::vector<std::string>> uses, defines;
    std::map<std::string, int> lastUse;
};

void summarise(ModuleCall& call, const Analysis& analysis,
    const std::function<bool(const std::string&, const std::string&)>& reachable, std::vector<std::string>& usedOut,
    std::vector<std::string>& definedOut)
{
    std::vector<std::string> used, defined;
    for (const auto& item : call.items) {
        if (item.call) {
            summarise(*item.call, analysis, reachable, used, defined);
        } else {
            used.insert(used.end(), analysis.uses[item.node].begin(), analysis.uses[item.node].end());
            defined.insert(defined.end(), analysis.defines[item.node].begin(), analysis.defines[item.node].end());
        }
    }
    const std::set<std::string> definedSet(defined.begin(), defined.end());
    std::set<std::string> seen;
    for (const auto& name : used)
        if (!definedSet.count(name) && !reachable(name, call.path) && seen.insert(name).second)
            call.inputs.push_back(name);
    for (const auto& name : defined) {
        const auto it = analysis.lastUse.find(name);
        if (it != analysis.lastUse.end() && it->second > call.lastNode)
            call.outputs.push_back(name);
    }
    usedOut.insert(usedOut.end(), used.begin(), used.end());
    definedOut.insert(definedOut.end(), defined.begin(), defined.end());
}

} // namespace

CallTree buildCallTree(const ex::Graph& graph, const std::vector<std::string>& programOutputs,
    const std::set<std::string>& modules, const std::function<bool(const std::string&, const std::string&)>& reachable,
    const std::vector<std::string>* given)
{
    const auto& nodes = graph.get_nodes();
    const int count = static_cast<int>(nodes.size());
    CallTree tree;
    tree.root = std::make_unique<ModuleCall>();
    std::string rootType;

    std::vector<std::vector<StackEntry>> stacks(nodes.size());
    std::vector<bool> known(nodes.size(), false);
    for (int i = 0; i < count; ++i) {
        if (given) {
            stacks[i] = moduleStack(given->at(static_cast<size_t>(i)), modules, rootType);
            known[i] = true;
            continue;
        }
        const auto& metadata = nodes[i].get_metadata();
        const auto it = metadata.find("nn_module_stack");
        if (it != metadata.end()) {
            stacks[i] = moduleStack(it->second, modules, rootType);
            known[i] = true;
        }
    }
    // A node export left without a stack (a symbolic size, an assertion) joins the modules its
    // neighbours share, so it does not split a call in two.
    for (int i = 0; i < count; ++i) {
        if (known[i])
            continue;
        int before = i - 1, after = i + 1;
        while (before >= 0 && !known[before])
            --before;
        while (after < count && !known[after])
            ++after;
        if (before < 0 || after >= count)
            continue;
        const auto& a = stacks[before];
        const auto& b = stacks[after];
        size_t common = 0;
        while (common < a.size() && common < b.size() && a[common].key == b[common].key)
            ++common;
        stacks[i].assign(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(common));
    }

    // Export computes each symbolic size once (sym_size(x, 0) on the input) in whichever module first
    // needs it, and later modules reuse it; left there, that module would return the size beside
    // its tensor. Size arithmetic that depends on the program's inputs alone runs first, at the top.
    std::vector<int> order;
    std::vector<bool> hoisted(nodes.size(), false);
    {
        std::set<std::string> defined;
        for (int i = 0; i < count; ++i)
            for (const auto& output : nodes[i].get_outputs())
                forEachValueName(output, [&](const std::string& name) { defined.insert(name); });
        std::set<std::string> early;
        for (int i = 0; i < count; ++i) {
            bool symbolic = !nodes[i].get_outputs().empty();
            for (const auto& output : nodes[i].get_outputs())
                symbolic = symbolic
                    && (output.tag() == ex::Argument::Tag::AS_SYM_INT || output.tag() == ex::Argument::Tag::AS_SYM_BOOL
                        || output.tag() == ex::Argument::Tag::AS_SYM_FLOAT);
            bool fromInputs = true;
            for (const auto& input : nodes[i].get_inputs())
                forEachValueName(input.get_arg(), [&](const std::string& name) {
                    fromInputs = fromInputs && (!defined.count(name) || early.count(name));
                });
            if (!symbolic || !fromInputs)
                continue;
            hoisted[i] = true;
            order.push_back(i);
            for (const auto& output : nodes[i].get_outputs())
                forEachValueName(output, [&](const std::string& name) { early.insert(name); });
        }
        for (int i = 0; i < count; ++i)
            if (!hoisted[i])
                order.push_back(i);
    }

    std::vector<ModuleCall*> open{tree.root.get()};
    std::vector<std::string> openKeys{""};
    for (int position = 0; position < count; ++position) {
        const int i = order[position];
        if (hoisted[i])
            stacks[i].clear();
        const auto& stack = stacks[i];
        size_t depth = 0;
        while (depth < stack.size() && depth + 1 < open.size() && openKeys[depth + 1] == stack[depth].key)
            ++depth;
        open.resize(depth + 1);
        openKeys.resize(depth + 1);
        for (size_t d = depth; d < stack.size(); ++d) {
            auto call = std::make_unique<ModuleCall>();
            call->path = stack[d].path;
            call->type = stack[d].type;
            tree.calledPaths.insert(call->path);
            tree.types.emplace(call->path, call->type);
            ModuleCall* raw = call.get();
            open.back()->items.push_back({-1, raw});
            open.back()->children.push_back(std::move(call));
            open.push_back(raw);
            openKeys.push_back(stack[d].key);
        }
        open.back()->items.push_back({i, nullptr});
        for (auto* call : open) {
            if (call->firstNode < 0)
                call->firstNode = position;
            call->lastNode = position;
        }
    }
    tree.root->type = rootType;
    tree.types[""] = rootType;

    Analysis analysis;
    analysis.uses.resize(nodes.size());
    analysis.defines.resize(nodes.size());
    for (int position = 0; position < count; ++position) {
        const int i = order[position];
        collect(nodes[i], analysis.uses[i], analysis.defines[i]);
        for (const auto& name : analysis.uses[i])
            analysis.lastUse[name] = position;
    }
    for (const auto& name : programOutputs)
        analysis.lastUse[name] = INT_MAX;
    std::vector<std::string> used, defined;
    summarise(*tree.root, analysis, reachable, used, defined);
    return tree;
}

std::vector<std::string> regionModuleStacks(const ex::Graph& region,
    const std::function<std::string(const std::string&)>& stateOf,
    const std::function<std::set<std::string>(const std::string&)>& parametersOf)
{
    static const std::set<std::string> wholeLayer{"conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
        "conv_transpose3d", "linear", "batch_norm", "_native_batch_norm_legit_no_training", "layer_norm", "group_norm",
        "instance_norm", "rms_norm", "embedding", "prelu"};
    const auto& nodes = region.get_nodes();
    std::vector<std::string> stacks(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) {
        const auto parts = split(nodes[i].get_target(), '.');
        if (parts.size() != 5 || parts[0] != "torch" || parts[2] != "aten" || !wholeLayer.count(parts[3]))
            continue;
        std::set<std::string> read, owners;
        for (const auto& input : nodes[i].get_inputs())
            forEachValueName(input.get_arg(), [&](const std::string& name) {
                const auto fqn = stateOf(name);
                if (fqn.empty())
                    return;
                read.insert(fqn);
                const auto dot = fqn.rfind('.');
                owners.insert(dot == std::string::npos ? std::string{} : fqn.substr(0, dot));
            });
        if (owners.size() != 1 || owners.begin()->empty())
            continue;
        const auto& path = *owners.begin();
        const auto parameters = parametersOf(path);
        if (parameters.empty() || !std::includes(read.begin(), read.end(), parameters.begin(), parameters.end()))
            continue;
        // A key of its own per node: a layer applied twice in a row is two calls, as its hooks see.
        stacks[i] = path + "#region" + std::to_string(i) + "," + path + ",";
    }
    return stacks;
}

} // namespace torchscope
