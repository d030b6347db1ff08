#include "exported/exported_model.h"

#include "common/error.h"
#include "common/strings.h"
#include "exported/call_tree.h"
#include "exported/exported_program.h"
#include "exported/node_emitter.h"
#include "exported/pt2_archive.h"
#include "exported/tree_spec.h"

#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/jit.h>
#include <torch/version.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <map>

namespace torchscope {

namespace ex = torch::_export;
using torch::jit::Graph;
using torch::jit::Value;

namespace {

// Raised inside the forward when an input does not fit the shapes the program was exported for:
// past export's guards the graph would compute with the traced sizes baked in, or fail deep inside.
constexpr const char* kHigherOrder = "torch.ops.higher_order.";

constexpr const char* kInputCheckSource = R"TS(
def check_input(x: Tensor, name: str, expected: List[int], low: List[int], high: List[int], shown: str):
    assert x.dim() == len(expected), "input '" + name + "' has " + str(x.dim()) + " dimensions, but the program was exported for " + shown
    for i in range(len(expected)):
        n = x.size(i)
        assert expected[i] < 0 or n == expected[i], "input '" + name + "' has size " + str(n) + " in dimension " + str(i) + ", but the program was exported for " + shown + " with that dimension fixed at " + str(expected[i]) + ": export it again with a torch.export.Dim for it"
        assert expected[i] >= 0 or (n >= low[i] and (high[i] < 0 or n <= high[i])), "input '" + name + "' has size " + str(n) + " in dimension " + str(i) + ", outside the range the program was exported for (" + shown + ")"
)TS";

Graph& inputCheck()
{
    static const auto graph = [] {
        const auto unit = torch::jit::compile(kInputCheckSource);
        auto copy = torch::jit::toGraphFunction(unit->get_function("check_input")).graph()->copy();
        torch::jit::Inline(*copy);
        return copy;
    }();
    return *graph;
}

std::string identifier(const std::string& text)
{
    std::string out;
    for (char c : text)
        out += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
    if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0])))
        out = "_" + out;
    return out;
}

// TorchScript refuses debug names that are plain numbers (they are its own unnamed values).
bool usableName(const std::string& name)
{
    return !name.empty() && !std::all_of(name.begin(), name.end(), [](char c) { return std::isdigit(c); });
}

std::string className(const std::string& pythonType)
{
    std::vector<std::string> atoms{"__torch__"};
    for (const auto& atom : split(pythonType.empty() ? std::string("torch.nn.Module") : pythonType, '.'))
        if (!atom.empty())
            atoms.push_back(identifier(atom));
    return join(atoms, ".");
}

std::string parentPath(const std::string& path)
{
    const auto dot = path.rfind('.');
    return dot == std::string::npos ? std::string{} : path.substr(0, dot);
}

std::string lastAtom(const std::string& path)
{
    const auto dot = path.rfind('.');
    return dot == std::string::npos ? path : path.substr(dot + 1);
}

// The symbol a symbolic size stands for ("Symbol('s77', positive=True, integer=True)" -> "s77").
std::string symbolName(const std::string& expression)
{
    const std::string prefix = "Symbol('";
    if (startsWith(expression, prefix)) {
        const auto end = expression.find('\'', prefix.size());
        if (end != std::string::npos)
            return expression.substr(prefix.size(), end - prefix.size());
    }
    return expression;
}

class Builder {
public:
    Builder(const ExportedArchive& archive, const c10::Device& device, ExportedProgramInfo& info)
        : archive_(archive)
        , program_(archive.program.get_graph_module())
        , device_(device)
        , info_(info)
    { }

    std::unique_ptr<torch::jit::Module> build()
    {
        for (const auto& [name, state] : archive_.state) {
            stateByFqn_[state.fqn] = name;
            if (state.kind == ExportedState::Kind::Parameter)
                parameters_[parentPath(state.fqn)].insert(state.fqn);
        }
        std::vector<std::string> outputs;
        for (const auto& spec : program_.get_signature().get_output_specs())
            forEachValueName(outputArgument(spec), [&](const std::string& n) { outputs.push_back(n); });
        for (const auto& entry : program_.get_module_call_graph())
            modulePaths_.insert(entry.get_fqn());
        tree_ = buildCallTree(program_.get_graph(), outputs, modulePaths_,
            [this](const std::string& name, const std::string& path) { return reachable(name, path); });
        createModules();
        emitRoot();
        info_.nodeCount = program_.get_graph().get_nodes().size();
        return std::make_unique<torch::jit::Module>(modules_.at(""));
    }

private:
    static ex::Argument outputArgument(const ex::OutputSpec& spec)
    {
        using Tag = ex::OutputSpec::Tag;
        ex::Argument argument;
        switch (spec.tag()) {
        case Tag::USER_OUTPUT:
            return spec.get_user_output().get_arg();
        case Tag::LOSS_OUTPUT:
            argument.set_as_tensor(spec.get_loss_output().get_arg());
            return argument;
        case Tag::BUFFER_MUTATION:
            argument.set_as_tensor(spec.get_buffer_mutation().get_arg());
            return argument;
        case Tag::USER_INPUT_MUTATION:
            argument.set_as_tensor(spec.get_user_input_mutation().get_arg());
            return argument;
        case Tag::PARAMETER_MUTATION:
            argument.set_as_tensor(spec.get_parameter_mutation().get_arg());
            return argument;
        default:
            break;
        }
        throw Error("the program returns gradients or effect tokens (a joint or side-effecting program); "
                    "TorchScope opens inference programs from torch.export.export");
    }

    // The lifted state a value name stands for: its own entry, or inside a region's subgraph the
    // state passed in under that name.
    const ExportedState* stateOf(const std::string& name) const
    {
        const auto alias = alias_.find(name);
        const auto it = archive_.state.find(alias == alias_.end() ? name : alias->second);
        return it == archive_.state.end() ? nullptr : &it->second;
    }

    bool reachable(const std::string& name, const std::string& path) const
    {
        const auto* state = stateOf(name);
        return state && isWithin(parentPath(state->fqn), path);
    }

    void createModule(const std::string& path)
    {
        if (modules_.count(path))
            return;
        if (!path.empty())
            createModule(parentPath(path));
        const auto type = tree_.types.count(path) ? tree_.types.at(path) : std::string{};
        torch::jit::Module module(c10::QualifiedName(className(type)), unit_, /*shouldMangle=*/true);
        module.register_attribute("training", c10::BoolType::get(), false);
        modules_.emplace(path, module);
        if (!path.empty())
            modules_.at(parentPath(path)).register_module(lastAtom(path), module);
    }

    // In the program's module order (module_call_graph follows Python's named_modules()), so the
    // tree reads as the model's code defines it; paths only the nodes or the weights name come after.
    void createModules()
    {
        unit_ = std::make_shared<torch::jit::CompilationUnit>();
        createModule("");
        for (const auto& entry : program_.get_module_call_graph())
            createModule(entry.get_fqn());
        for (const auto& path : tree_.calledPaths)
            createModule(path);
        for (const auto& name : archive_.stateOrder)
            createModule(parentPath(archive_.state.at(name).fqn));
        for (const auto& name : archive_.stateOrder) {
            const auto& state = archive_.state.at(name);
            auto& owner = modules_.at(parentPath(state.fqn));
            const auto attribute = lastAtom(state.fqn);
            if (state.kind == ExportedState::Kind::Parameter)
                owner.register_parameter(attribute, state.tensor, false);
            else
                owner.register_buffer(attribute, state.tensor);
        }
    }

    struct Scope {
        Graph* graph = nullptr;
        Value* self = nullptr;
        std::string path;
        std::map<std::string, Value*> values;
        std::map<std::string, Value*> modules; // relative path -> module value
    };

    ValueScope valueScope(Scope& scope)
    {
        ValueScope result;
        result.resolve = [this, &scope](const std::string& name) { return resolve(scope, name); };
        result.define = [&scope](const std::string& name, Value* value) {
            if (!value->hasDebugName() && usableName(name))
                value->setDebugName(name);
            scope.values[name] = value;
        };
        result.exportDevice = archive_.exportDevice;
        result.device = device_;
        return result;
    }

    Value* moduleValue(Scope& scope, const std::string& path)
    {
        if (path == scope.path)
            return scope.self;
        if (const auto it = scope.modules.find(path); it != scope.modules.end())
            return it->second;
        Value* parent = moduleValue(scope, parentPath(path));
        Value* value = scope.graph->insertGetAttr(parent, lastAtom(path));
        scope.modules[path] = value;
        return value;
    }

    Value* resolve(Scope& scope, const std::string& name)
    {
        if (const auto it = scope.values.find(name); it != scope.values.end())
            return it->second;
        const auto* state = stateOf(name);
        if (!state || !isWithin(parentPath(state->fqn), scope.path))
            throw Error("the program's graph reads the value '" + name + "' before any node produces it");
        Value* owner = moduleValue(scope, parentPath(state->fqn));
        Value* value = scope.graph->insertGetAttr(owner, lastAtom(state->fqn));
        scope.values[name] = value;
        return value;
    }

    // `nodes`: those of the graph the call tree was built from (the program's, or a region's).
    void emitItems(const ModuleCall& call, Scope& scope, const std::vector<ex::Node>& nodes)
    {
        auto values = valueScope(scope);
        for (const auto& item : call.items) {
            if (item.call) {
                emitCall(*item.call, scope, nodes);
                continue;
            }
            const auto& node = nodes[static_cast<size_t>(item.node)];
            if (startsWith(node.get_target(), kHigherOrder))
                emitRegion(node, scope);
            else
                emitExportedNode(*scope.graph, node, values);
        }
    }

    // The call's nodes become a method of its module; the caller's graph calls it.
    void emitCall(const ModuleCall& call, Scope& caller, const std::vector<ex::Node>& nodes)
    {
        auto& module = modules_.at(call.path);
        const int number = callCount_[call.path]++;
        const std::string method = number == 0 ? "forward" : "forward__" + std::to_string(number);

        auto graph = std::make_shared<Graph>();
        Scope scope;
        scope.graph = graph.get();
        scope.path = call.path;
        scope.self = graph->addInput("self")->setType(module.type());
        std::vector<Value*> arguments{moduleValue(caller, call.path)};
        for (const auto& name : call.inputs) {
            Value* outer = resolve(caller, name);
            Value* inner = graph->addInput()->setType(outer->type());
            if (usableName(name))
                inner->setDebugName(name);
            scope.values[name] = inner;
            arguments.push_back(outer);
        }
        emitItems(call, scope, nodes);
        std::vector<Value*> results;
        for (const auto& name : call.outputs)
            results.push_back(resolve(scope, name));
        Value* returned = results.size() == 1 ? results[0]
            : results.empty()                 ? graph->insertConstant(c10::IValue())
                                              : graph->insertNode(graph->createTuple(results))->output();
        graph->registerOutput(returned);

        auto* function = unit_->create_function(c10::QualifiedName(*module.type()->name(), method), graph);
        module.type()->addMethod(function);

        auto* node = caller.graph->insertNode(caller.graph->create(c10::prim::CallMethod, arguments, 1));
        node->s_(c10::attr::name, method);
        node->output()->setType(returned->type());
        if (results.size() == 1) {
            caller.values[call.outputs[0]] = node->output();
        } else if (results.size() > 1) {
            auto* unpack = caller.graph->insertNode(caller.graph->createTupleUnpack(node->output()));
            for (size_t i = 0; i < results.size(); ++i)
                caller.values[call.outputs[i]] = unpack->output(i);
        }
    }

    // The names a region's argument or its subgraph's inputs and outputs hold, in order (export writes
    // a symbolic size among a region's operands as if it were a tensor).
    static std::vector<std::string> namesOf(const std::vector<ex::Argument>& arguments)
    {
        std::vector<std::string> names;
        for (const auto& argument : arguments)
            forEachValueName(argument, [&](const std::string& name) { names.push_back(name); });
        return names;
    }

    static std::string describe(const ex::Node& node)
    {
        return "node '" + node.get_name().value_or("?") + "' (" + node.get_target() + ")";
    }

    // The nodes of a region's subgraph, written where the graph's insertion point is (inside a
    // branch or a loop body), on `inputs` in the order of the subgraph's inputs; returns its outputs.
    // The subgraph sees only what it is given; the modules it calls become calls of their methods.
    std::vector<Value*> emitSubgraph(const ex::Graph& region, const std::vector<Value*>& inputs,
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

    const ex::Graph& subgraph(const ex::Node& node, size_t index) const
    {
        const auto& inputs = node.get_inputs();
        if (index >= inputs.size() || inputs[index].get_arg().tag() != ex::Argument::Tag::AS_GRAPH)
            throw Error(describe(node) + " has no subgraph as its argument " + std::to_string(index)
                + ": it is not written as torch.export " TORCH_VERSION " writes it");
        return *inputs[index].get_arg().get_as_graph().get_graph();
    }

    std::vector<std::string> operandNames(const ex::Node& node, size_t index) const
    {
        const auto& inputs = node.get_inputs();
        if (index >= inputs.size())
            throw Error(describe(node) + " has " + std::to_string(inputs.size())
                + " arguments: it is not written as torch.export " TORCH_VERSION " writes it");
        return namesOf({inputs[index].get_arg()});
    }

    static Value* condition(Graph& graph, Value* value)
    {
        return value->type()->isSubtypeOf(*c10::TensorType::get()) ? graph.insert(c10::aten::Bool, {value}) : value;
    }

    // torch.cond, while_loop and map as TorchScript's own control flow (prim::If, prim::Loop) around
    // their subgraphs' nodes: the engine instruments the modules called inside as it does a scripted
    // model's branches and loops, and autograd follows the branch or the iterations that ran.
    void emitRegion(const ex::Node& node, Scope& scope)
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
            Value* predicate
                = condition(graph, emitArgument(graph, node.get_inputs().at(0).get_arg(), valueScope(scope)));
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
                const auto unified = c10::unifyTypes(
                    branch->blocks()[0]->outputs()[i]->type(), branch->blocks()[1]->outputs()[i]->type());
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

    const ex::ModuleCallSignature* rootSignature() const
    {
        for (const auto& entry : program_.get_module_call_graph())
            if (entry.get_fqn().empty() && entry.get_signature())
                return &*entry.get_signature();
        return nullptr;
    }

    // The user inputs in the order of the program's flat input list: a graph name, or "" for a
    // value export baked in (a Python number), which the forward takes and ignores.
    std::vector<std::pair<std::string, c10::TypePtr>> userInputs() const
    {
        std::vector<std::pair<std::string, c10::TypePtr>> inputs;
        for (const auto& spec : program_.get_signature().get_input_specs()) {
            if (spec.tag() != ex::InputSpec::Tag::USER_INPUT)
                continue;
            const auto& arg = spec.get_user_input().get_arg();
            using Tag = ex::Argument::Tag;
            switch (arg.tag()) {
            case Tag::AS_TENSOR:
                inputs.emplace_back(arg.get_as_tensor().get_name(), c10::TensorType::get());
                break;
            case Tag::AS_SYM_INT:
                inputs.emplace_back(arg.get_as_sym_int().tag() == ex::SymIntArgument::Tag::AS_NAME
                        ? arg.get_as_sym_int().get_as_name()
                        : std::string{},
                    c10::IntType::get());
                break;
            case Tag::AS_INT:
                inputs.emplace_back("", c10::IntType::get());
                break;
            case Tag::AS_FLOAT:
                inputs.emplace_back("", c10::FloatType::get());
                break;
            case Tag::AS_BOOL:
                inputs.emplace_back("", c10::BoolType::get());
                break;
            case Tag::AS_STRING:
                inputs.emplace_back("", c10::StringType::get());
                break;
            default:
                inputs.emplace_back("", c10::NoneType::get());
                break;
            }
        }
        return inputs;
    }

    c10::TypePtr specType(
        const TreeSpec& spec, const std::vector<std::pair<std::string, c10::TypePtr>>& leaves, size_t& next) const
    {
        if (spec.isLeaf()) {
            if (next >= leaves.size())
                throw Error("the program's input spec has more leaves than it has inputs");
            return leaves[next++].second;
        }
        std::vector<c10::TypePtr> types;
        for (const auto& child : spec.children)
            types.push_back(specType(child, leaves, next));
        if (spec.type == "builtins.list" && !types.empty())
            return c10::ListType::create(types[0]);
        if ((spec.type == "builtins.dict" || spec.type == "collections.OrderedDict") && !types.empty())
            return c10::DictType::create(c10::StringType::get(), types[0]);
        return c10::TupleType::create(types);
    }

    // Takes a forward argument apart into the program's flat inputs.
    void unpackInput(Scope& scope, Value* value, const TreeSpec& spec,
        const std::vector<std::pair<std::string, c10::TypePtr>>& leaves, size_t& next)
    {
        Graph& graph = *scope.graph;
        if (spec.isLeaf()) {
            const auto& name = leaves[next++].first;
            if (!name.empty())
                scope.values[name] = value;
            return;
        }
        std::vector<Value*> parts;
        if (spec.type == "builtins.dict" || spec.type == "collections.OrderedDict") {
            for (size_t i = 0; i < spec.children.size(); ++i) {
                const auto key = spec.context.is_array() && i < spec.context.size() ? spec.context[i].get<std::string>()
                                                                                    : std::string{};
                parts.push_back(graph.insert(c10::aten::__getitem__, {value, graph.insertConstant(key)}));
            }
        } else if (spec.type == "builtins.list") {
            auto* unpack = graph.insertNode(graph.createListUnpack(value, spec.children.size()));
            parts = unpack->outputs().vec();
        } else {
            auto* unpack = graph.insertNode(graph.createTupleUnpack(value));
            parts = unpack->outputs().vec();
        }
        for (size_t i = 0; i < spec.children.size(); ++i)
            unpackInput(scope, parts[i], spec.children[i], leaves, next);
    }

    void addInputs(Scope& scope)
    {
        const auto leaves = userInputs();
        const auto* signature = rootSignature();
        std::vector<std::string> names;
        if (signature && signature->get_forward_arg_names())
            names = *signature->get_forward_arg_names();
        TreeSpec args, kwargs;
        if (signature && !signature->get_in_spec().empty()) {
            const auto spec = parseTreeSpec(signature->get_in_spec());
            if (spec.children.size() == 2) {
                args = spec.children[0];
                kwargs = spec.children[1];
            }
        } else {
            args.type = "builtins.tuple";
            args.children.resize(leaves.size());
        }
        std::vector<std::pair<std::string, const TreeSpec*>> arguments;
        for (size_t i = 0; i < args.children.size(); ++i)
            arguments.emplace_back(i < names.size() ? names[i] : "input_" + std::to_string(i), &args.children[i]);
        for (size_t i = 0; i < kwargs.children.size(); ++i)
            arguments.emplace_back(kwargs.context.is_array() && i < kwargs.context.size()
                    ? kwargs.context[i].get<std::string>()
                    : "kwarg_" + std::to_string(i),
                &kwargs.children[i]);
        size_t typed = 0, unpacked = 0;
        for (const auto& [name, spec] : arguments) {
            Value* input = scope.graph->addInput()->setType(specType(*spec, leaves, typed));
            if (usableName(identifier(name)))
                input->setDebugName(identifier(name));
            unpackInput(scope, input, *spec, leaves, unpacked);
        }
        if (typed != leaves.size())
            throw Error("the program's input spec has " + std::to_string(typed) + " leaves but the program takes "
                + std::to_string(leaves.size()) + " inputs");
        checkInputShapes(scope, leaves);
    }

    void checkInputShapes(Scope& scope, const std::vector<std::pair<std::string, c10::TypePtr>>& leaves)
    {
        const auto& values = program_.get_graph().get_tensor_values();
        const auto& ranges = archive_.program.get_range_constraints();
        for (const auto& [name, type] : leaves) {
            const auto meta = values.find(name);
            if (name.empty() || meta == values.end())
                continue;
            std::vector<int64_t> expected, low, high;
            std::vector<std::string> shown;
            for (const auto& size : meta->second.get_sizes()) {
                if (size.tag() == ex::SymInt::Tag::AS_INT) {
                    expected.push_back(size.get_as_int());
                    low.push_back(0);
                    high.push_back(-1);
                    shown.push_back(std::to_string(size.get_as_int()));
                    continue;
                }
                const auto symbol = symbolName(size.get_as_expr().get_expr_str());
                expected.push_back(-1);
                const auto range = ranges.find(symbol);
                low.push_back(range != ranges.end() && range->second.get_min_val() ? *range->second.get_min_val() : 0);
                high.push_back(
                    range != ranges.end() && range->second.get_max_val() ? *range->second.get_max_val() : -1);
                shown.push_back(symbol);
            }
            const std::string shape = std::string(c10::getDtypeNames(toScalarType(meta->second.get_dtype())).first)
                + "[" + join(shown, ", ") + "]";
            info_.inputs.push_back(name + ": " + shape);
            Graph& graph = *scope.graph;
            torch::jit::insertGraph(graph, inputCheck(),
                {scope.values.at(name), graph.insertConstant(name), graph.insertConstant(expected),
                    graph.insertConstant(low), graph.insertConstant(high), graph.insertConstant(shape)});
        }
        for (const auto& [symbol, range] : ranges)
            info_.dynamicDimensions.push_back(symbol + " in [" + std::to_string(range.get_min_val().value_or(0)) + ", "
                + (range.get_max_val() ? std::to_string(*range.get_max_val()) : std::string("inf")) + "]");
    }

    Value* packOutput(Scope& scope, const TreeSpec& spec, const std::vector<Value*>& leaves, size_t& next)
    {
        Graph& graph = *scope.graph;
        if (spec.isLeaf()) {
            if (next >= leaves.size())
                throw Error("the program's output spec has more leaves than it has outputs");
            return leaves[next++];
        }
        std::vector<Value*> parts;
        for (const auto& child : spec.children)
            parts.push_back(packOutput(scope, child, leaves, next));
        std::vector<c10::TypePtr> types;
        for (auto* part : parts)
            types.push_back(part->type());
        c10::TypePtr unified = types.empty() ? nullptr : types[0];
        for (const auto& type : types)
            if (unified)
                unified = c10::unifyTypes(unified, type).value_or(nullptr);
        if (spec.type == "builtins.list" && unified)
            return graph.insertNode(graph.createList(unified, parts))->output();
        // builtins.dict, collections.OrderedDict (torchvision's segmentation models), defaultdict.
        const bool isDict = spec.type == "builtins.dict" || spec.type == "collections.OrderedDict"
            || spec.type == "collections.defaultdict";
        if (isDict && spec.context.is_array() && spec.context.size() == parts.size()) {
            std::vector<Value*> keys;
            for (const auto& key : spec.context)
                keys.push_back(graph.insertConstant(key.is_string() ? key.get<std::string>() : key.dump()));
            return graph
                .insertNode(
                    graph.createDict(c10::StringType::get(), unified ? unified : c10::AnyType::get(), keys, parts))
                ->output();
        }
        return graph.insertNode(graph.createTuple(parts))->output();
    }

    void emitRoot()
    {
        auto& root = modules_.at("");
        auto graph = std::make_shared<Graph>();
        Scope scope;
        scope.graph = graph.get();
        scope.self = graph->addInput("self")->setType(root.type());
        addInputs(scope);
        emitItems(*tree_.root, scope, program_.get_graph().get_nodes());

        std::vector<Value*> leaves;
        auto values = valueScope(scope);
        for (const auto& spec : program_.get_signature().get_output_specs()) {
            using Tag = ex::OutputSpec::Tag;
            if (spec.tag() == Tag::USER_OUTPUT || spec.tag() == Tag::LOSS_OUTPUT) {
                leaves.push_back(emitArgument(*graph, outputArgument(spec), values));
                continue;
            }
            // A functional update of a buffer or input is written back, as ExportedProgram.module() does.
            std::string target;
            if (spec.tag() == Tag::BUFFER_MUTATION)
                target = stateByFqn_.at(spec.get_buffer_mutation().get_buffer_name());
            else if (spec.tag() == Tag::PARAMETER_MUTATION)
                target = stateByFqn_.at(spec.get_parameter_mutation().get_parameter_name());
            else if (spec.tag() == Tag::USER_INPUT_MUTATION)
                target = spec.get_user_input_mutation().get_user_input_name();
            Value* updated = resolve(scope, outputArgument(spec).get_as_tensor().get_name());
            Value* destination = resolve(scope, target);
            if (updated != destination)
                graph->insert(c10::aten::copy_, {destination, updated});
        }
        const auto* signature = rootSignature();
        Value* returned = nullptr;
        if (signature && !signature->get_out_spec().empty()) {
            size_t next = 0;
            returned = packOutput(scope, parseTreeSpec(signature->get_out_spec()), leaves, next);
        } else {
            returned = leaves.size() == 1 ? leaves[0] : graph->insertNode(graph->createTuple(leaves))->output();
        }
        graph->registerOutput(returned);
        auto* function = unit_->create_function(c10::QualifiedName(*root.type()->name(), "forward"), graph);
        root.type()->addMethod(function);
    }

    const ExportedArchive& archive_;
    const ex::GraphModule& program_;
    c10::Device device_;
    ExportedProgramInfo& info_;
    CallTree tree_;
    std::shared_ptr<torch::jit::CompilationUnit> unit_;
    std::map<std::string, torch::jit::Module> modules_;
    std::map<std::string, std::string> stateByFqn_;
    std::map<std::string, int> callCount_;
    std::map<std::string, std::string> alias_; // a region's input name -> the state passed in as it
    std::map<std::string, std::set<std::string>> parameters_; // module path -> its own parameters
    std::set<std::string> modulePaths_; // the program's module_call_graph
};

} // namespace

std::string describeExportedProgram(const ExportedProgramInfo& info)
{
    std::string text = "torch.export program (.pt2) by PyTorch " + info.torchVersion + ", schema " + info.schemaVersion
        + ", " + std::to_string(info.nodeCount) + " nodes";
    if (!info.inputs.empty())
        text += "; inputs " + join(info.inputs, ", ");
    if (!info.dynamicDimensions.empty())
        text += "; dynamic " + join(info.dynamicDimensions, ", ");
    return text;
}

std::unique_ptr<torch::jit::Module> loadExportedProgram(
    const std::string& path, const std::string& device, ExportedProgramInfo& info)
{
    const Pt2Archive archive(path);
    const auto program = readExportedArchive(archive, c10::Device(device));
    info.torchVersion = program.program.get_torch_version();
    info.schemaVersion = std::to_string(program.program.get_schema_version().get_major()) + "."
        + std::to_string(program.program.get_schema_version().get_minor());
    return Builder(program, c10::Device(device), info).build();
}

} // namespace torchscope
