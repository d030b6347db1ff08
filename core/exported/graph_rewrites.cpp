#include "exported/graph_rewrites.h"

#include "common/error.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <vector>

namespace torchscope {
namespace {

using json = nlohmann::json;
using Renames = std::map<std::string, std::string>;

constexpr const char* Autocast = "torch.ops.higher_order.wrap_with_autocast";
constexpr const char* GradEnabled = "torch.ops.higher_order.wrap_with_set_grad_enabled";
constexpr int Positional = 1; // the export schema's ArgumentKind.POSITIONAL

std::string describe(const json& node)
{
    const auto name = node.contains("name") && node.at("name").is_string() ? node.at("name").get<std::string>() : "?";
    return "node '" + name + "' (" + node.value("target", std::string("?")) + ")";
}

// An argument of the export schema nests a few levels (a list of optional tensors); a file that
// nests deeper is refused before its depth can exhaust the stack.
constexpr int DeepestArgument = 32;
constexpr int DeepestRegion = 16; // regions inside regions (export writes them side by side)

void checkDepth(int depth)
{
    if (depth > DeepestArgument)
        throw Error("an argument nests deeper than the export schema's arguments do (" + std::to_string(DeepestArgument)
            + " levels)");
}

// Visits each name an argument refers to (a tensor's "name", a symbolic value's "as_name"), as the
// JSON string that holds it, so that it can be read or renamed; a subgraph inside has names of its own.
void forEachName(json& argument, const std::function<void(json& name)>& visit, int depth = 0)
{
    checkDepth(depth);
    if (argument.is_array()) {
        for (auto& item : argument)
            forEachName(item, visit, depth + 1);
        return;
    }
    if (!argument.is_object())
        return;
    for (auto it = argument.begin(); it != argument.end(); ++it) {
        if (it.key() == "as_graph")
            continue;
        if ((it.key() == "name" || it.key() == "as_name") && it.value().is_string())
            visit(it.value());
        else
            forEachName(it.value(), visit, depth + 1);
    }
}

void renameArgument(json& argument, const Renames& renames)
{
    forEachName(argument, [&](json& name) {
        if (const auto found = renames.find(name.get<std::string>()); found != renames.end())
            name = found->second;
    });
}

// The value an argument names: a tensor, or a symbolic int, bool or float; "" for a constant or None.
std::string valueName(const json& argument)
{
    if (!argument.is_object())
        return {};
    if (argument.contains("as_tensor"))
        return argument.at("as_tensor").value("name", std::string{});
    for (const char* symbolic : {"as_sym_int", "as_sym_bool", "as_sym_float"})
        if (argument.contains(symbolic) && argument.at(symbolic).is_object())
            return argument.at(symbolic).value("as_name", std::string{});
    return {};
}

// The names a list of arguments (a graph's inputs or outputs, a node's outputs) holds, in order, a
// list of tensors counting each; "" where one holds no name.
std::vector<std::string> flatNames(const json& arguments)
{
    std::vector<std::string> names;
    if (!arguments.is_array())
        return names;
    for (const auto& argument : arguments) {
        if (argument.is_object() && argument.contains("as_tensors") && argument.at("as_tensors").is_array())
            for (const auto& tensor : argument.at("as_tensors"))
                names.push_back(tensor.value("name", std::string{}));
        else
            names.push_back(valueName(argument));
    }
    return names;
}

bool isTensor(const json& values, const std::string& name)
{
    return values.contains("tensor_values") && values.at("tensor_values").contains(name);
}

class Inliner {
public:
    Inliner(json& graph, int depth)
        : graph_(graph)
        , depth_(depth)
    {
        if (depth_ > DeepestRegion)
            throw Error("the program nests regions more than " + std::to_string(DeepestRegion) + " deep");
        for (const char* table :
            {"tensor_values", "sym_int_values", "sym_bool_values", "sym_float_values", "custom_obj_values"})
            if (graph_.contains(table) && graph_.at(table).is_object())
                for (auto it = graph_.at(table).begin(); it != graph_.at(table).end(); ++it)
                    taken_.insert(it.key());
        for (const auto& node : graph_.at("nodes"))
            if (node.contains("name") && node.at("name").is_string())
                taken_.insert(node.at("name").get<std::string>());
    }

    void run()
    {
        json nodes = json::array();
        for (auto& node : graph_.at("nodes")) {
            const std::string target = node.value("target", std::string{});
            if (target != Autocast && target != GradEnabled) {
                nodes.push_back(std::move(node));
                continue;
            }
            for (auto& inlined : inline_(node))
                nodes.push_back(std::move(inlined));
        }
        graph_["nodes"] = std::move(nodes);
    }

private:
    std::string fresh(const std::string& wanted)
    {
        std::string name = wanted;
        for (int n = 1; taken_.count(name); ++n)
            name = wanted + "_" + std::to_string(n);
        taken_.insert(name);
        return name;
    }

    static const json& input(const json& node, size_t index, const char* kind)
    {
        const auto& inputs = node.at("inputs");
        if (index >= inputs.size() || !inputs.at(index).contains("arg") || !inputs.at(index).at("arg").contains(kind))
            throw Error(describe(node) + " does not have the arguments torch.export writes for it (argument "
                + std::to_string(index) + " should be " + kind + ")");
        return inputs.at(index).at("arg").at(kind);
    }

    std::vector<json> inline_(const json& node)
    {
        const bool autocast = node.at("target") == Autocast;
        // wrap_with_autocast(device_type, dtype, enabled, cache_enabled, subgraph, *operands);
        // wrap_with_set_grad_enabled(enabled, subgraph, *operands).
        const size_t region = autocast ? 4 : 1;
        const bool enabled = input(node, autocast ? 2 : 0, "as_bool").get<bool>();
        if (autocast && enabled)
            throw Error(describe(node) + " runs its region under torch.autocast on '"
                + input(node, 0, "as_string").get<std::string>()
                + "', in a lower precision than the rest of the program: TorchScope runs a program in one "
                  "precision (its dtype setting); export the model with autocast off (torch.autocast(..., "
                  "enabled=False) in the region, or no autocast around it)");
        const bool detach = !autocast && !enabled;
        const json& wrapped = input(node, region, "as_graph");
        json sub = wrapped.at("graph");
        if (!sub.is_object() || !sub.contains("nodes") || !sub.at("nodes").is_array())
            throw Error(describe(node) + ": its region's graph has no list of nodes");
        Inliner(sub, depth_ + 1).run(); // regions inside the region first
        const std::string prefix = wrapped.value("name", std::string("region"));

        Renames renames;
        const auto parameters = flatNames(sub.value("inputs", json::array()));
        const auto& inputs = node.at("inputs");
        if (inputs.size() - region - 1 != parameters.size())
            throw Error(describe(node) + " passes " + std::to_string(inputs.size() - region - 1)
                + " values into a region that takes " + std::to_string(parameters.size()));
        for (size_t i = 0; i < parameters.size(); ++i) {
            const std::string outer = valueName(inputs.at(region + 1 + i).value("arg", json::object()));
            if (outer.empty() || parameters[i].empty())
                throw Error(describe(node) + " passes a constant into its region (argument "
                    + std::to_string(region + 1 + i) + "); TorchScope inlines regions over named values only");
            renames[parameters[i]] = outer;
        }

        std::set<std::string> made; // the names the region's own nodes define
        for (const auto& inner : sub.at("nodes"))
            for (const auto& name : flatNames(inner.value("outputs", json::array())))
                if (!name.empty())
                    made.insert(name);
        const auto results = flatNames(sub.value("outputs", json::array()));
        const auto outputs = flatNames(node.value("outputs", json::array()));
        if (results.size() != outputs.size())
            throw Error(describe(node) + " has " + std::to_string(outputs.size()) + " outputs, its region returns "
                + std::to_string(results.size()));
        // A result the region makes takes the node's output name; others (a value passed straight
        // through, one returned twice, any result of a region without gradients) get a node of their own.
        std::vector<size_t> passed;
        for (size_t i = 0; i < results.size(); ++i) {
            if (outputs[i].empty())
                continue;
            if (!detach && made.count(results[i]) && !renames.count(results[i]))
                renames[results[i]] = outputs[i];
            else
                passed.push_back(i);
        }
        for (const auto& name : made)
            if (!renames.count(name))
                renames[name] = fresh(prefix + "_" + name);

        std::vector<json> nodes;
        for (const auto& original : sub.at("nodes")) {
            json inner = original;
            if (inner.contains("inputs"))
                for (auto& argument : inner.at("inputs"))
                    if (argument.contains("arg"))
                        renameArgument(argument.at("arg"), renames);
            if (inner.contains("outputs"))
                renameArgument(inner.at("outputs"), renames);
            inner["name"] = fresh(prefix + "_" + inner.value("name", std::string("node")));
            nodes.push_back(std::move(inner));
        }
        for (const char* table : {"tensor_values", "sym_int_values", "sym_bool_values", "sym_float_values"})
            if (sub.contains(table) && sub.at(table).is_object())
                for (auto it = sub.at(table).begin(); it != sub.at(table).end(); ++it)
                    if (const auto renamed = renames.find(it.key()); renamed != renames.end() && made.count(it.key()))
                        graph_[table][renamed->second] = it.value();
        for (const size_t i : passed) {
            const std::string source = renames.count(results[i]) ? renames.at(results[i]) : results[i];
            if (!isTensor(graph_, outputs[i]))
                throw Error(describe(node) + " returns the symbolic value '" + results[i]
                    + "' of its region unchanged; TorchScope inlines regions whose results are tensors");
            json self = json::object();
            self["name"] = "self";
            self["arg"]["as_tensor"]["name"] = source;
            self["kind"] = Positional;
            json output = json::object();
            output["as_tensor"]["name"] = outputs[i];
            json extra = json::object();
            extra["target"] = detach ? "torch.ops.aten.detach.default" : "torch.ops.aten.alias.default";
            extra["inputs"] = json::array();
            extra["inputs"].push_back(std::move(self));
            extra["outputs"] = json::array();
            extra["outputs"].push_back(std::move(output));
            extra["metadata"] = node.value("metadata", json::object());
            extra["name"] = fresh(outputs[i] + (detach ? "_detached" : "_alias"));
            nodes.push_back(std::move(extra));
        }
        return nodes;
    }

    json& graph_;
    int depth_ = 0;
    std::set<std::string> taken_;
};

// The innermost module of a node's nn_module_stack ("key,path,type;..."): its path and type.
std::pair<std::string, std::string> innermostModule(const json& node)
{
    if (!node.contains("metadata") || !node.at("metadata").is_object())
        return {};
    const auto& metadata = node.at("metadata");
    if (!metadata.contains("nn_module_stack") || !metadata.at("nn_module_stack").is_string())
        return {};
    const auto text = metadata.at("nn_module_stack").get<std::string>();
    std::pair<std::string, std::string> innermost;
    size_t begin = 0;
    while (begin <= text.size()) {
        const size_t end = std::min(text.find(';', begin), text.size());
        const std::string entry = text.substr(begin, end - begin);
        const auto first = entry.find(',');
        const auto last = entry.rfind(',');
        if (first != std::string::npos && last != first && last > first + 1)
            innermost = {entry.substr(first + 1, last - first - 1), entry.substr(last + 1)};
        begin = end + 1;
    }
    return innermost;
}

bool within(const std::string& path, const std::string& scope)
{
    return scope.empty() || path == scope
        || (path.size() > scope.size() && path.compare(0, scope.size(), scope) == 0 && path[scope.size()] == '.');
}

// The tensor a dropout in eval mode returns as it is (train=False), or "".
std::string evalDropoutInput(const json& node)
{
    static const std::set<std::string> dropouts{"torch.ops.aten.dropout.default",
        "torch.ops.aten.feature_dropout.default", "torch.ops.aten.alpha_dropout.default",
        "torch.ops.aten.feature_alpha_dropout.default"};
    if (!dropouts.count(node.value("target", std::string{})) || !node.contains("inputs"))
        return {};
    std::string input;
    bool evaluating = false;
    for (const auto& argument : node.at("inputs")) {
        const auto name = argument.value("name", std::string{});
        const auto& arg = argument.value("arg", json::object());
        if (name == "input")
            input = valueName(arg);
        else if (name == "train")
            evaluating = arg.contains("as_bool") && arg.at("as_bool") == false;
    }
    return evaluating ? input : std::string{};
}

} // namespace

void inlineWrappedRegions(nlohmann::json& graph)
{
    if (!graph.is_object() || !graph.contains("nodes") || !graph.at("nodes").is_array())
        return;
    Inliner(graph, 0).run();
}

void readThroughEvalDropouts(nlohmann::json& graph)
{
    if (!graph.is_object() || !graph.contains("nodes") || !graph.at("nodes").is_array())
        return;
    auto& nodes = graph.at("nodes");
    struct Alias {
        std::string input;
        std::string scope; // uses outside it read `input`
    };
    std::map<std::string, Alias> aliases;
    std::map<std::string, std::string> madeIn; // value -> the innermost module of the node making it
    std::set<std::string> scopes;
    std::vector<std::string> paths;
    for (const auto& node : nodes) {
        const auto [path, type] = innermostModule(node);
        paths.push_back(path);
        const auto outputs = flatNames(node.value("outputs", json::array()));
        for (const auto& name : outputs)
            if (!name.empty())
                madeIn[name] = path;
        const std::string input = evalDropoutInput(node);
        if (input.empty() || outputs.size() != 1 || outputs[0].empty())
            continue;
        // A Dropout module's node: the module that called it; a functional dropout: its module.
        const bool module = type.size() >= 7 && type.compare(type.size() - 7, 7, "Dropout") == 0;
        const auto dot = path.rfind('.');
        const std::string scope = !module ? path : dot == std::string::npos ? std::string{} : path.substr(0, dot);
        if (!scope.empty()) {
            aliases[outputs[0]] = {input, scope};
            scopes.insert(scope);
        }
    }
    if (aliases.empty())
        return;
    // A scope whose only result read outside it is the dropout's returns the dropout's result (a
    // head that is a dropout alone): its readers are left alone. Others return something else.
    std::set<std::string> returnsOther;
    const auto readAt = [&](const std::string& name, const std::string& reader) {
        const auto made = madeIn.find(name);
        if (made == madeIn.end() || aliases.count(name))
            return;
        for (std::string scope = made->second; !scope.empty();) {
            if (scopes.count(scope) && !within(reader, scope))
                returnsOther.insert(scope);
            const auto dot = scope.rfind('.');
            scope = dot == std::string::npos ? std::string{} : scope.substr(0, dot);
        }
    };
    for (size_t i = 0; i < nodes.size(); ++i)
        if (nodes[i].contains("inputs"))
            for (auto& argument : nodes[i].at("inputs"))
                if (argument.contains("arg"))
                    forEachName(argument.at("arg"), [&](json& name) { readAt(name.get<std::string>(), paths[i]); });
    for (const auto& name : flatNames(graph.value("outputs", json::array())))
        readAt(name, {});
    for (size_t i = 0; i < nodes.size(); ++i) {
        if (!nodes[i].contains("inputs"))
            continue;
        for (auto& argument : nodes[i].at("inputs")) {
            if (!argument.contains("arg"))
                continue;
            forEachName(argument.at("arg"), [&](json& name) {
                std::string source = name.get<std::string>();
                for (auto it = aliases.find(source);
                     it != aliases.end() && returnsOther.count(it->second.scope) && !within(paths[i], it->second.scope);
                     it = aliases.find(source))
                    source = it->second.input;
                name = source;
            });
        }
    }
}

} // namespace torchscope
