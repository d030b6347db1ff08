#pragma once

// A request describes itself (docs/architecture.md, "Requests"): each analysis request names its
// parameters once, in a `visit` member, with their help, range or choices and whether they are
// needed; the struct's own initialisers are the only defaults. Everything that needs the list
// reads it from there: the CLI's options (app/cli/request_options.h binds them to CLI11 with its
// validators), the manifest's settings (requestSettings), the window's defaults (a request built
// by its default constructor) and the Python keyword arguments.
//
//     void ConceptRelevanceRequest::visit(ParameterVisitor& v)
//     {
//         v.visit(Parameter("layer", "the module whose channels are measured").needed(), layer);
//         v.visit(Parameter("top", "references per channel").range(1, 10000), top);
//         v.visit(Parameter("channels", "top:K or channel indices"), textField(channels));
//     }
//
// A parameter's name is the CLI's option without its dashes, the manifest's key and Python's
// keyword. No Torch, no CLI11 here.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace torchscope {

// What a parameter is, besides its value.
struct Parameter {
    Parameter(std::string name, std::string help);

    std::string name; // "channels": --channels, the manifest's "channels", Python's channels=
    std::string help; // one line, as --help shows it
    std::optional<double> min, max; // numbers: the range allowed, closed unless `open`
    bool open = false; // min and max themselves are not allowed (a fraction strictly between 0 and 1)
    std::vector<std::string> choices; // texts: the values allowed (empty: any)
    // Texts and list items: returns "" when `value` is allowed, else what is wrong with it.
    std::function<std::string(const std::string& value)> check;
    bool required = false; // the request means nothing without it
    bool existingFolder = false; // a folder that must exist when given
    bool recorded = true; // written to the manifest's settings (false: what the manifest holds elsewhere)
    bool describesDefault = true; // --help shows the default (false where the default is a sentinel)

    Parameter& range(double low, double high);
    Parameter& openRange(double low, double high);
    Parameter& atLeast(double low);
    Parameter& oneOf(std::vector<std::string> allowed);
    Parameter& checkedBy(std::function<std::string(const std::string&)> checker);
    Parameter& needed();
    Parameter& folder();
    Parameter& unrecorded();
    Parameter& defaultNotShown();
};

// A value read and written as text: a type of its own with a parse and a toString (ChannelChoice's
// "top:8"), seen by the visitors as a string.
struct TextField {
    std::function<std::string()> format;
    std::function<void(const std::string&)> parse; // throws torchscope::Error for a text it cannot read
};

// T with `static T parse(const std::string&)` and `std::string toString() const`.
template <typename T> TextField textField(T& value)
{
    return {[&value] { return value.toString(); }, [&value](const std::string& text) { value = T::parse(text); }};
}

// Each parameter of a request, in the order its visit names them.
class ParameterVisitor {
public:
    virtual ~ParameterVisitor() = default;
    virtual void visit(const Parameter& p, bool& value) = 0;
    virtual void visit(const Parameter& p, int& value) = 0;
    virtual void visit(const Parameter& p, int64_t& value) = 0;
    virtual void visit(const Parameter& p, double& value) = 0;
    virtual void visit(const Parameter& p, std::string& value) = 0;
    virtual void visit(const Parameter& p, std::vector<std::string>& value) = 0; // repeatable
    virtual void visit(const Parameter& p, TextField value) = 0;
};

// A parameter as a list of them shows it: for docs, the window's defaults, Python's signature.
struct ParameterDescription {
    Parameter parameter;
    std::string kind; // "bool", "integer", "number", "text", "list"
    std::string defaultValue; // the request's own, as text ("" for an empty text or list)
};

namespace parameters_detail {
std::vector<std::pair<std::string, std::string>> settingsOf(const std::function<void(ParameterVisitor&)>& visit);
std::vector<ParameterDescription> describe(const std::function<void(ParameterVisitor&)>& visit);
std::vector<std::string> check(const std::function<void(ParameterVisitor&)>& visit);
} // namespace parameters_detail

// The settings a result records: name and value as text of each recorded parameter, in visit order
// (a list: one entry, its items separated by spaces; numbers: the shortest text that reads back as
// the same value).
template <typename Request> std::vector<std::pair<std::string, std::string>> requestSettings(Request request)
{
    return parameters_detail::settingsOf([&request](ParameterVisitor& v) { request.visit(v); });
}

// Every parameter of a request type with its default (a default-constructed request's values).
template <typename Request> std::vector<ParameterDescription> describeParameters()
{
    Request request;
    return parameters_detail::describe([&request](ParameterVisitor& v) { request.visit(v); });
}

// What is wrong with a request's values against its own description: a number out of its range, a
// text not among its choices or refused by its check, a needed parameter left empty. One line each,
// naming the parameter; empty when all is well.
template <typename Request> std::vector<std::string> parameterProblems(Request request)
{
    return parameters_detail::check([&request](ParameterVisitor& v) { request.visit(v); });
}

} // namespace torchscope
