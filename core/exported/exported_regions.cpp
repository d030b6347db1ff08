// torch.cond, while_loop and map of an exported program as TorchScript's prim::If and prim::Loop
// (see exported/program_builder.h).

#include "common/error.h"
#include "common/strings.h"
#include "exported/program_builder.h"
#include "model/torch_names.h"

#include <torch/version.h>

#include <limits>

namespace torchscope {

namespace ex = torch::_export;
using torch::jit::Graph;
using torch::jit::Value;

std::vector<std::string> ProgramBuilder::namesOf(const std::vector<ex::Argument>& arguments)
{
    std::vector<std::string> names;
    for (const auto& argument : arguments)
        forEachValueName(argument, [&](const std::string& name) { names.push_back(name); });
    return names;
}

std::string ProgramBuilder::describe(const ex::Node& node)
{
    return "node '" + node.get_name().value_or("?") + "' (" + node.get_target() + ")";
}

std::vector<Value*> ProgramBuilder::emitSubgraph(const ex::Graph& region, const std::vector<Value*>& inputs,
    const std::vector<std::string>& outerNames, Scope& outer, const std::string& what)
{
    const auto names = namesOf(region.get_inputs());
    if (names.size() != inputs.size())
        throw Error(what + " passes " + std::to_string(inputs.size()) + " values to a subgraph that takes "
            + std::to_string(names.size()));
    Scope scope;
    scope.graph = outer.graph;
    scope.self = outer.self;
    scope.path = outer.path;
    scope.modules = outer.modules;
    std::map<std::string, std::string> aliases;
    for (size_t i = 0; i < names.size(); ++i) {
        scope.values[names[i]] = inputs[i];
        if (const auto* state = i < outerNames.size() ? stateOf(outerNames[i]) : nullptr)
            aliases[names[i]] = stateByFqn_.at(state->fqn);
    }
    std::swap(alias_, aliases);
    try {
        const auto stacks = regionModuleStacks(
            region,
            [this](const std::string& name) {
                const auto* state = stateOf(name);
                return state ? state->fqn : std::string{};
            },
            [this](const std::string& path) {
                const auto it = parameters_.find(path);
                return it == parameters_.end() ? std::set<std::string>{} : it->second;
            });
        // Only modules below the one running the region can be called from it.
        auto within = stacks;
        for (auto& stack : within)
            if (!stack.empty() && !isWithin(split(stack, ',')[1], scope.path))
                stack.clear();
        const auto outputs = namesOf(region.get_outputs());
        const auto tree = buildCallTree(
            region, outputs, modulePaths_,
            [this](const std::string& name, const std::string& path) { return reachable(name, path); }, &within);
        emitItems(*tree.root, scope, region.get_nodes());
        std::vector<Value*> results;
        for (const auto& name : outputs)
            results.push_back(resolve(scope, name));
        std::swap(alias_, aliases);
        return results;
    } catch (...) {
        std::swap(alias_, aliases);
        throw;
    }
}

const ex::Graph& ProgramBuilder::subgraph(const ex::Node& node, size_t index) const
{
    const auto& inputs = node.get_inputs();
    if (index >= inputs.size() || inputs[index].get_arg().tag() != ex::Argument::Tag::AS_GRAPH)
        throw Error(describe(node) + " has no subgraph as its argument " + std::to_string(index)
            + ": it is not written as torch.export " TORCH_VERSION " writes it");
    return *inputs[index].get_arg().get_as_graph().get_graph();
}

std::vector<std::string> ProgramBuilder::operandNames(const ex::Node& node, size_t index) const
{
    const auto& inputs = node.get_inputs();
    if (index >= inputs.size())
        throw Error(describe(node) + " has " + std::to_string(inputs.size())
            + " arguments: it is not written as torch.export " TORCH_VERSION " writes it");
    return namesOf({inputs[index].get_arg()});
}

Value* ProgramBuilder::condition(Graph& graph, Value* value)
{
    return value->type()->isSubtypeOf(*c10::TensorType::get()) ? graph.insert(c10::aten::Bool, {value}) : value;
}

void ProgramBuilder::emitRegion(const ex::Node& node, Scope& scope)
{
    Graph& graph = *scope.graph;
    const auto& target = node.get_target();
    const std::string what = describe(node);
    const auto results = namesOf(node.get_outputs());
    auto resolveAll = [&](const std::vector<std::string>& names) {
        std::vector<Value*> values;
        for (const auto& name : names)
            values.push_back(resolve(scope, name));
        return values;
    };
    auto concat = [](std::vector<Value*> a, const std::vector<Value*>& b) {
        a.insert(a.end(), b.begin(), b.end());
        return a;
    };
    auto concatNames = [](std::vector<std::string> a, const std::vector<std::string>& b) {
        a.insert(a.end(), b.begin(), b.end());
        return a;
    };
    ExportedProgramInfo::Region described{what, scope.path, {}};
    for (const auto& input : node.get_inputs())
        forEachValueName(input.get_arg(), [&](const std::string& name) {
            if (const auto* state = stateOf(name))
                for (auto path = parentPath(state->fqn); path != scope.path && isWithin(path, scope.path);
                     path = parentPath(path))
                    described.modules.insert(path);
        });
    info_.regions.push_back(std::move(described));
    std::vector<Value*> produced;
    if (target == "torch.ops.higher_order.cond") {
        const auto operands = operandNames(node, 3);
        const auto values = resolveAll(operands);
        Value* predicate = condition(graph, emitArgument(graph, node.get_inputs().at(0).get_arg(), valueScope(scope)));
        auto* branch = graph.insertNode(graph.create(c10::prim::If, {predicate}, results.size()));
        for (size_t b = 0; b < 2; ++b) {
            auto* block = branch->addBlock();
            torch::jit::WithInsertPoint inside(block);
            const auto outputs = emitSubgraph(subgraph(node, 1 + b), values, operands, scope, what);
            if (outputs.size() != results.size())
                throw Error(what + ": a branch returns " + std::to_string(outputs.size()) + " values, the node "
                    + std::to_string(results.size()));
            for (auto* output : outputs)
                block->registerOutput(output);
        }
        for (size_t i = 0; i < results.size(); ++i) {
            const auto unified
                = c10::unifyTypes(branch->blocks()[0]->outputs()[i]->type(), branch->blocks()[1]->outputs()[i]->type());
            if (!unified)
                throw Error(what + ": its branches return different kinds of value as result " + std::to_string(i));
            branch->output(i)->setType(*unified);
        }
        produced = branch->outputs().vec();
    } else if (target == "torch.ops.higher_order.while_loop") {
        const auto carriedNames = operandNames(node, 2);
        const auto extraNames = operandNames(node, 3);
        const auto carried = resolveAll(carriedNames);
        const auto extra = resolveAll(extraNames);
        const auto names = concatNames(carriedNames, extraNames);
        auto test = [&](const std::vector<Value*>& state) {
            const auto outputs = emitSubgraph(subgraph(node, 0), concat(state, extra), names, scope, what);
            if (outputs.size() != 1)
                throw Error(what + ": its condition returns " + std::to_string(outputs.size()) + " values");
            return condition(graph, outputs[0]);
        };
        Value* first = test(carried);
        std::vector<Value*> loopInputs{graph.insertConstant(std::numeric_limits<int64_t>::max()), first};
        loopInputs.insert(loopInputs.end(), carried.begin(), carried.end());
        auto* loop = graph.insertNode(graph.create(c10::prim::Loop, loopInputs, carried.size()));
        auto* body = loop->addBlock();
        body->addInput()->setType(c10::IntType::get());
        std::vector<Value*> state;
        for (auto* value : carried)
            state.push_back(body->addInput()->setType(c10::unshapedType(value->type())));
        {
            torch::jit::WithInsertPoint inside(body);
            const auto next = emitSubgraph(subgraph(node, 1), concat(state, extra), names, scope, what);
            if (next.size() != carried.size())
                throw Error(what + ": its body returns " + std::to_string(next.size()) + " values for "
                    + std::to_string(carried.size()) + " carried ones");
            body->registerOutput(test(next));
            for (auto* value : next)
                body->registerOutput(value);
        }
        for (size_t i = 0; i < carried.size(); ++i)
            loop->output(i)->setType(c10::unshapedType(carried[i]->type()));
        produced = loop->outputs().vec();
    } else if (target == "torch.ops.higher_order.map_impl") {
        const auto sliced = operandNames(node, 1);
        const auto extraNames = operandNames(node, 2);
        const auto xs = resolveAll(sliced);
        const auto extra = resolveAll(extraNames);
        if (xs.empty())
            throw Error(what + " maps over no tensors");
        std::vector<std::string> names(sliced.size()); // a slice stands for no state
        names = concatNames(names, extraNames);
        Value* count = graph.insert(c10::aten::size, {xs[0], graph.insertConstant(0)});
        std::vector<Value*> lists;
        for (size_t i = 0; i < results.size(); ++i)
            lists.push_back(graph.insertNode(graph.createList(c10::TensorType::get(), {}))->output());
        auto* loop = graph.insertNode(graph.create(c10::prim::Loop, {count, graph.insertConstant(true)}, 0));
        auto* body = loop->addBlock();
        Value* index = body->addInput()->setType(c10::IntType::get());
        {
            torch::jit::WithInsertPoint inside(body);
            std::vector<Value*> slices;
            for (auto* x : xs)
                slices.push_back(graph.insert(c10::aten::select, {x, graph.insertConstant(0), index}));
            const auto outputs = emitSubgraph(subgraph(node, 0), concat(slices, extra), names, scope, what);
            if (outputs.size() != results.size())
                throw Error(what + ": its body returns " + std::to_string(outputs.size()) + " values, the node "
                    + std::to_string(results.size()));
            for (size_t i = 0; i < outputs.size(); ++i)
                graph.insert(c10::aten::append, {lists[i], outputs[i]});
            body->registerOutput(graph.insertConstant(true));
        }
        for (auto* list : lists)
            produced.push_back(graph.insert(c10::aten::stack, {list, graph.insertConstant(0)}));
    } else {
        throw Error(what
            + " is a higher-order operator TorchScope does not run; it runs torch.cond, while_loop and map, and "
              "regions under autocast off or torch.no_grad()");
    }
    if (produced.size() != results.size())
        throw Error(what + " gives " + std::to_string(produced.size()) + " values for its "
            + std::to_string(results.size()) + " results");
    auto values = valueScope(scope);
    for (size_t i = 0; i < results.size(); ++i)
        values.define(results[i], produced[i]);
}

} // namespace torchscope
