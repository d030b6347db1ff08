#include "exported/node_emitter.h"

#include "common/error.h"
#include "common/strings.h"

#include <torch/csrc/jit/runtime/operator.h>
#include <torch/version.h>

#include <map>

namespace torchscope {

namespace ex = torch::_export;
using torch::jit::Graph;
using torch::jit::Value;

namespace {

using Tag = ex::Argument::Tag;

Value* symInt(Graph& graph, const ex::SymIntArgument& value, const ValueScope& scope)
{
    return value.tag() == ex::SymIntArgument::Tag::AS_NAME ? scope.resolve(value.get_as_name())
                                                           : graph.insertConstant(value.get_as_int());
}

Value* symBool(Graph& graph, const ex::SymBoolArgument& value, const ValueScope& scope)
{
    return value.tag() == ex::SymBoolArgument::Tag::AS_NAME ? scope.resolve(value.get_as_name())
                                                            : graph.insertConstant(value.get_as_bool());
}

Value* symFloat(Graph& graph, const ex::SymFloatArgument& value, const ValueScope& scope)
{
    return value.tag() == ex::SymFloatArgument::Tag::AS_NAME ? scope.resolve(value.get_as_name())
                                                             : graph.insertConstant(value.get_as_float().get());
}

template <typename Item, typename Emit>
Value* list(Graph& graph, const std::vector<Item>& items, const c10::TypePtr& elementType, Emit emit)
{
    std::vector<Value*> values;
    for (const auto& item : items)
        values.push_back(emit(item));
    return graph.insertNode(graph.createList(elementType, values))->output();
}

c10::Device followModel(const c10::Device& device, const ValueScope& scope)
{
    // Export bakes the device it traced on into factory calls (torch.arange(n, device=x.device)).
    return device.type() == scope.exportDevice.type() ? scope.device : device;
}

std::string describe(const ex::Node& node)
{
    const auto& name = node.get_name();
    return "node '" + (name ? *name : std::string("?")) + "' (" + node.get_target() + ")";
}

} // namespace

void forEachValueName(const ex::Argument& argument, const std::function<void(const std::string&)>& visit)
{
    switch (argument.tag()) {
    case Tag::AS_TENSOR:
        visit(argument.get_as_tensor().get_name());
        break;
    case Tag::AS_TENSORS:
        for (const auto& t : argument.get_as_tensors())
            visit(t.get_name());
        break;
    case Tag::AS_OPTIONAL_TENSOR:
        if (argument.get_as_optional_tensor().tag() == ex::OptionalTensorArgument::Tag::AS_TENSOR)
            visit(argument.get_as_optional_tensor().get_as_tensor().get_name());
        break;
    case Tag::AS_OPTIONAL_TENSORS:
        for (const auto& t : argument.get_as_optional_tensors())
            if (t.tag() == ex::OptionalTensorArgument::Tag::AS_TENSOR)
                visit(t.get_as_tensor().get_name());
        break;
    case Tag::AS_SYM_INT:
        if (argument.get_as_sym_int().tag() == ex::SymIntArgument::Tag::AS_NAME)
            visit(argument.get_as_sym_int().get_as_name());
        break;
    case Tag::AS_SYM_INTS:
        for (const auto& s : argument.get_as_sym_ints())
            if (s.tag() == ex::SymIntArgument::Tag::AS_NAME)
                visit(s.get_as_name());
        break;
    case Tag::AS_SYM_BOOL:
        if (argument.get_as_sym_bool().tag() == ex::SymBoolArgument::Tag::AS_NAME)
            visit(argument.get_as_sym_bool().get_as_name());
        break;
    case Tag::AS_SYM_BOOLS:
        for (const auto& s : argument.get_as_sym_bools())
            if (s.tag() == ex::SymBoolArgument::Tag::AS_NAME)
                visit(s.get_as_name());
        break;
    case Tag::AS_SYM_FLOAT:
        if (argument.get_as_sym_float().tag() == ex::SymFloatArgument::Tag::AS_NAME)
            visit(argument.get_as_sym_float().get_as_name());
        break;
    case Tag::AS_SYM_FLOATS:
        for (const auto& s : argument.get_as_sym_floats())
            if (s.tag() == ex::SymFloatArgument::Tag::AS_NAME)
                visit(s.get_as_name());
        break;
    default:
        break;
    }
}

Value* emitArgument(Graph& graph, const ex::Argument& argument, const ValueScope& scope)
{
    switch (argument.tag()) {
    case Tag::AS_NONE:
        return graph.insertConstant(c10::IValue());
    case Tag::AS_TENSOR:
        return scope.resolve(argument.get_as_tensor().get_name());
    case Tag::AS_TENSORS:
        return list(graph, argument.get_as_tensors(), c10::TensorType::get(),
            [&](const ex::TensorArgument& t) { return scope.resolve(t.get_name()); });
    case Tag::AS_OPTIONAL_TENSOR:
    case Tag::AS_OPTIONAL_TENSORS: {
        auto optional = [&](const ex::OptionalTensorArgument& t) {
            return t.tag() == ex::OptionalTensorArgument::Tag::AS_TENSOR ? scope.resolve(t.get_as_tensor().get_name())
                                                                         : graph.insertConstant(c10::IValue());
        };
        if (argument.tag() == Tag::AS_OPTIONAL_TENSOR)
            return optional(argument.get_as_optional_tensor());
        return list(graph, argument.get_as_optional_tensors(), c10::OptionalType::ofTensor(), optional);
    }
    case Tag::AS_INT:
        return graph.insertConstant(argument.get_as_int());
    case Tag::AS_INTS:
        return graph.insertConstant(argument.get_as_ints());
    case Tag::AS_FLOAT:
        return graph.insertConstant(argument.get_as_float().get());
    case Tag::AS_FLOATS: {
        std::vector<double> values;
        for (const auto& f : argument.get_as_floats())
            values.push_back(f.get());
        return graph.insertConstant(values);
    }
    case Tag::AS_BOOL:
        return graph.insertConstant(argument.get_as_bool());
    case Tag::AS_BOOLS: {
        c10::List<bool> values;
        for (const bool b : argument.get_as_bools())
            values.push_back(b);
        return graph.insertConstant(values);
    }
    case Tag::AS_STRING:
        return graph.insertConstant(argument.get_as_string());
    case Tag::AS_STRINGS:
        return graph.insertConstant(c10::List<std::string>(argument.get_as_strings()));
    case Tag::AS_SYM_INT:
        return symInt(graph, argument.get_as_sym_int(), scope);
    case Tag::AS_SYM_INTS: {
        const auto& items = argument.get_as_sym_ints();
        std::vector<int64_t> constant;
        for (const auto& s : items)
            if (s.tag() == ex::SymIntArgument::Tag::AS_INT)
                constant.push_back(s.get_as_int());
        if (constant.size() == items.size())
            return graph.insertConstant(constant);
        return list(
            graph, items, c10::IntType::get(), [&](const ex::SymIntArgument& s) { return symInt(graph, s, scope); });
    }
    case Tag::AS_SYM_BOOL:
        return symBool(graph, argument.get_as_sym_bool(), scope);
    case Tag::AS_SYM_BOOLS:
        return list(graph, argument.get_as_sym_bools(), c10::BoolType::get(),
            [&](const ex::SymBoolArgument& s) { return symBool(graph, s, scope); });
    case Tag::AS_SYM_FLOAT:
        return symFloat(graph, argument.get_as_sym_float(), scope);
    case Tag::AS_SYM_FLOATS:
        return list(graph, argument.get_as_sym_floats(), c10::FloatType::get(),
            [&](const ex::SymFloatArgument& s) { return symFloat(graph, s, scope); });
    case Tag::AS_SCALAR_TYPE:
        return graph.insertConstant(toScalarType(argument.get_as_scalar_type()));
    case Tag::AS_MEMORY_FORMAT:
        return graph.insertConstant(toMemoryFormat(argument.get_as_memory_format()));
    case Tag::AS_LAYOUT:
        return graph.insertConstant(toLayout(argument.get_as_layout()));
    case Tag::AS_DEVICE:
        return graph.insertConstant(followModel(toDevice(argument.get_as_device()), scope));
    case Tag::AS_COMPLEX:
        return graph.insertConstant(c10::complex<double>(
            argument.get_as_complex().get_real().get(), argument.get_as_complex().get_imag().get()));
    case Tag::AS_GRAPH:
        throw Error("a subgraph argument (control flow: torch.cond, torch.map, while_loop)");
    case Tag::AS_CUSTOM_OBJ:
        throw Error("a script object argument (torch.classes)");
    case Tag::AS_OPERATOR:
        throw Error("an operator passed as an argument");
    default:
        break;
    }
    throw Error("an argument of export-schema kind " + std::to_string(static_cast<int>(argument.tag())));
}

namespace {

// Python's operator module and torch.sym_* on symbolic sizes, as TorchScript's int builtins.
const std::map<std::string, std::string>& pythonOperators()
{
    static const std::map<std::string, std::string> table{{"_operator.add", "aten::add"},
        {"_operator.sub", "aten::sub"}, {"_operator.mul", "aten::mul"}, {"_operator.floordiv", "aten::floordiv"},
        {"_operator.mod", "aten::remainder"}, {"_operator.truediv", "aten::div"}, {"_operator.pow", "aten::pow"},
        {"_operator.neg", "aten::neg"}, {"_operator.eq", "aten::eq"}, {"_operator.ne", "aten::ne"},
        {"_operator.lt", "aten::lt"}, {"_operator.le", "aten::le"}, {"_operator.gt", "aten::gt"},
        {"_operator.ge", "aten::ge"}, {"_operator.and_", "aten::__and__"}, {"_operator.or_", "aten::__or__"},
        {"_operator.not_", "aten::__not__"}, {"torch.sym_not", "aten::__not__"}, {"torch.sym_max", "prim::max"},
        {"torch.sym_min", "prim::min"}, {"torch.sym_float", "aten::Float"}, {"torch.sym_int", "aten::Int"},
        {"math.ceil", "aten::ceil"}, {"math.floor", "aten::floor"}, {"math.sqrt", "aten::sqrt"},
        {"torch._sym_sqrt", "aten::sqrt"}};
    return table;
}

// Symbolic-size queries have a TorchScript twin that returns a plain int.
const std::map<std::string, std::string>& sizeQueries()
{
    static const std::map<std::string, std::string> table{{"aten::sym_size.int", "aten::size.int"},
        {"aten::sym_numel.default", "aten::numel"}, {"aten::sym_stride.int", "aten::stride.int"},
        {"aten::sym_storage_offset.default", "aten::storage_offset"}};
    return table;
}

void defineOutputs(Graph& graph, const ex::Node& node, const std::vector<Value*>& results, const ValueScope& scope)
{
    const auto& outputs = node.get_outputs();
    if (results.size() == 1 && outputs.size() > 1 && results[0]->type()->cast<c10::ListType>()) {
        // A Tensor[] return written as one output per element.
        auto* unpack = graph.insertNode(graph.createListUnpack(results[0], outputs.size()));
        for (size_t i = 0; i < outputs.size(); ++i)
            if (outputs[i].tag() == Tag::AS_TENSOR)
                scope.define(outputs[i].get_as_tensor().get_name(), unpack->output(i));
        return;
    }
    if (outputs.size() > results.size())
        throw Error(describe(node) + " has " + std::to_string(outputs.size()) + " outputs, but its operator returns "
            + std::to_string(results.size()));
    for (size_t i = 0; i < outputs.size(); ++i) {
        const auto& output = outputs[i];
        switch (output.tag()) {
        case Tag::AS_TENSOR:
            scope.define(output.get_as_tensor().get_name(), results[i]);
            break;
        case Tag::AS_TENSORS: {
            const auto& names = output.get_as_tensors();
            auto* unpack = graph.insertNode(graph.createListUnpack(results[i], names.size()));
            for (size_t k = 0; k < names.size(); ++k)
                scope.define(names[k].get_name(), unpack->output(k));
            break;
        }
        case Tag::AS_SYM_INT:
            if (output.get_as_sym_int().tag() == ex::SymIntArgument::Tag::AS_NAME)
                scope.define(output.get_as_sym_int().get_as_name(), results[i]);
            break;
        case Tag::AS_SYM_BOOL:
            if (output.get_as_sym_bool().tag() == ex::SymBoolArgument::Tag::AS_NAME)
                scope.define(output.get_as_sym_bool().get_as_name(), results[i]);
            break;
        case Tag::AS_SYM_FLOAT:
            if (output.get_as_sym_float().tag() == ex::SymFloatArgument::Tag::AS_NAME)
                scope.define(output.get_as_sym_float().get_as_name(), results[i]);
            break;
        default:
            break; // None, or a value export recorded as a constant
        }
    }
}

std::shared_ptr<torch::jit::Operator> findOperator(const std::string& qualified, const std::string& overload)
{
    for (const auto& candidate : torch::jit::getAllOperatorsFor(c10::Symbol::fromQualString(qualified)))
        if (candidate->schema().overload_name() == overload)
            return candidate;
    return nullptr;
}

std::string missingOperator(const std::string& ns, const std::string& name)
{
    if (ns == "aten" || ns == "prim")
        return "the operator " + name
            + " is unknown to this TorchScope's LibTorch " TORCH_VERSION
              ": the program was exported by a newer PyTorch; export it again with PyTorch " TORCH_VERSION;
    return "the operator " + name + " is not registered: load the library that defines the '" + ns
        + "' operators with --ops-library PATH (torchscope and torchscope-cli both take it)";
}

void emitPythonOperator(Graph& graph, const ex::Node& node, const std::string& symbol, const ValueScope& scope)
{
    std::vector<torch::jit::NamedValue> arguments;
    for (const auto& input : node.get_inputs())
        arguments.emplace_back(emitArgument(graph, input.get_arg(), scope));
    Value* result = nullptr;
    try {
        result = graph.insert(c10::Symbol::fromQualString(symbol), arguments);
    } catch (const std::exception& e) {
        throw Error(describe(node) + " on symbolic sizes has no TorchScript form: " + firstLine(e.what()));
    }
    defineOutputs(graph, node, {result}, scope);
}

} // namespace

void emitExportedNode(Graph& graph, const ex::Node& node, const ValueScope& scope)
{
    const std::string& target = node.get_target();
    if (const auto it = pythonOperators().find(target); it != pythonOperators().end())
        return emitPythonOperator(graph, node, it->second, scope);
    if (!startsWith(target, "torch.ops."))
        throw Error(
            describe(node) + " calls the Python function '" + target + "', which has no operator TorchScope could run");
    const auto parts = split(target.substr(10), '.');
    if (parts.size() != 3)
        throw Error(describe(node) + " names an operator TorchScope cannot parse");
    const std::string& ns = parts[0];
    if (ns == "higher_order")
        throw Error(describe(node)
            + " is a higher-order operator, which runs as the control flow around its "
              "subgraphs (torch.cond, while_loop, map), never as one node");
    std::string qualified = ns + "::" + parts[1];
    std::string overload = parts[2] == "default" ? "" : parts[2];
    const std::string shown = qualified + (overload.empty() ? "" : "." + overload);
    if (const auto twin = sizeQueries().find(qualified + "." + parts[2]); twin != sizeQueries().end()) {
        const auto dot = twin->second.find('.');
        qualified = twin->second.substr(0, dot);
        overload = dot == std::string::npos ? "" : twin->second.substr(dot + 1);
    }
    const auto op = findOperator(qualified, overload);
    if (!op)
        throw Error(describe(node) + ": " + missingOperator(ns, shown));
    const auto& schema = op->schema();

    std::map<std::string, const ex::Argument*> given;
    for (const auto& input : node.get_inputs())
        given[input.get_name()] = &input.get_arg();
    std::vector<Value*> inputs;
    try {
        for (const auto& argument : schema.arguments()) {
            const auto it = given.find(argument.name());
            if (it != given.end()) {
                inputs.push_back(emitArgument(graph, *it->second, scope));
                given.erase(it);
            } else if (argument.default_value()) {
                inputs.push_back(graph.insertConstant(*argument.default_value()));
            } else {
                throw Error(
                    "it gives no value for '" + argument.name() + "', which has no default in " + toString(schema));
            }
        }
    } catch (const Error& e) {
        throw Error(describe(node) + ": " + e.what());
    }
    if (!given.empty())
        throw Error(describe(node) + " passes '" + given.begin()->first + "', which " + toString(schema)
            + " does not take: the program was exported by a different PyTorch than " TORCH_VERSION);

    auto* created
        = graph.insertNode(graph.create(c10::Symbol::fromQualString(qualified), inputs, schema.returns().size()));
    for (size_t i = 0; i < schema.returns().size(); ++i) {
        const auto type = schema.returns()[i].type();
        if (type->hasFreeVariables())
            throw Error(
                describe(node) + " returns a generic type (" + type->repr_str() + ") TorchScope cannot resolve");
        created->output(i)->setType(type);
    }
    // The interpreter picks the operator by the inputs' types. A number given where the schema
    // says Tensor (mul.Tensor(x, 2), as Python allows) selects the Scalar overload, which ATen
    // defines as the Tensor overload on the wrapped number; anything else is a mismatch.
    const auto* matched = created->maybeSchema();
    if (!matched || matched->name() != schema.name())
        throw Error(describe(node) + ": its arguments do not fit " + toString(schema));
    defineOutputs(graph, node, created->outputs().vec(), scope);
}

} // namespace torchscope
