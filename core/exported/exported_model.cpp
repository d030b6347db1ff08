#include "exported/exported_model.h"

#include "common/error.h"
#include "common/strings.h"
#include "exported/program_builder.h"
#include "exported/pt2_archive.h"
#include "model/torch_names.h"

#include <torch/version.h>

#include <algorithm>
#include <cctype>

namespace torchscope {

namespace ex = torch::_export;
using torch::jit::Graph;
using torch::jit::Value;

namespace {

constexpr const char* kHigherOrder = "torch.ops.higher_order.";

// "a.b.c" -> "c"
std::string lastAtom(const std::string& path)
{
    const auto dot = path.rfind('.');
    return dot == std::string::npos ? path : path.substr(dot + 1);
}

} // namespace

std::string ProgramBuilder::identifier(const std::string& text)
{
    std::string out;
    for (char c : text)
        out += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
    if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0])))
        out = "_" + out;
    return out;
}

std::string ProgramBuilder::className(const std::string& pythonType)
{
    std::vector<std::string> atoms{"__torch__"};
    for (const auto& atom : split(pythonType.empty() ? std::string("torch.nn.Module") : pythonType, '.'))
        if (!atom.empty())
            atoms.push_back(identifier(atom));
    return join(atoms, ".");
}

bool ProgramBuilder::usableName(const std::string& name)
{
    return !name.empty() && !std::all_of(name.begin(), name.end(), [](char c) { return std::isdigit(c); });
}

std::unique_ptr<torch::jit::Module> ProgramBuilder::build()
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

ex::Argument ProgramBuilder::outputArgument(const ex::OutputSpec& spec)
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

const ExportedState* ProgramBuilder::stateOf(const std::string& name) const
{
    const auto alias = alias_.find(name);
    const auto it = archive_.state.find(alias == alias_.end() ? name : alias->second);
    return it == archive_.state.end() ? nullptr : &it->second;
}

bool ProgramBuilder::reachable(const std::string& name, const std::string& path) const
{
    const auto* state = stateOf(name);
    return state && isWithin(parentPath(state->fqn), path);
}

void ProgramBuilder::createModule(const std::string& path)
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

void ProgramBuilder::createModules()
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

ValueScope ProgramBuilder::valueScope(Scope& scope)
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

Value* ProgramBuilder::moduleValue(Scope& scope, const std::string& path)
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

Value* ProgramBuilder::resolve(Scope& scope, const std::string& name)
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

void ProgramBuilder::emitItems(const ModuleCall& call, Scope& scope, const std::vector<ex::Node>& nodes)
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

void ProgramBuilder::emitCall(const ModuleCall& call, Scope& caller, const std::vector<ex::Node>& nodes)
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

void ProgramBuilder::emitRoot()
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
    return ProgramBuilder(program, c10::Device(device), info).build();
}

} // namespace torchscope
