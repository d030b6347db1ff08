#include "common/parameters.h"

#include "common/strings.h"

#include <algorithm>
#include <cmath>

namespace torchscope {

Parameter::Parameter(std::string name_, std::string help_)
    : name(std::move(name_))
    , help(std::move(help_))
{ }

Parameter& Parameter::range(double low, double high)
{
    min = low;
    max = high;
    return *this;
}

Parameter& Parameter::openRange(double low, double high)
{
    range(low, high);
    open = true;
    return *this;
}

Parameter& Parameter::atLeast(double low)
{
    min = low;
    return *this;
}

Parameter& Parameter::oneOf(std::vector<std::string> allowed)
{
    choices = std::move(allowed);
    return *this;
}

Parameter& Parameter::checkedBy(std::function<std::string(const std::string&)> checker)
{
    check = std::move(checker);
    return *this;
}

Parameter& Parameter::needed()
{
    required = true;
    return *this;
}

Parameter& Parameter::folder()
{
    existingFolder = true;
    return *this;
}

Parameter& Parameter::unrecorded()
{
    recorded = false;
    return *this;
}

Parameter& Parameter::defaultNotShown()
{
    describesDefault = false;
    return *this;
}

namespace parameters_detail {
namespace {

std::string integerText(int64_t value)
{
    return std::to_string(value);
}

// Visits with every value turned into text: the one place values become the manifest's words.
class TextVisitor : public ParameterVisitor {
public:
    virtual void text(const Parameter& p, const std::string& kind, const std::vector<std::string>& values) = 0;

    void visit(const Parameter& p, bool& value) override { text(p, "bool", {value ? "true" : "false"}); }
    void visit(const Parameter& p, int& value) override { text(p, "integer", {integerText(value)}); }
    void visit(const Parameter& p, int64_t& value) override { text(p, "integer", {integerText(value)}); }
    void visit(const Parameter& p, double& value) override { text(p, "number", {shortestNumber(value)}); }
    void visit(const Parameter& p, std::string& value) override { text(p, "text", {value}); }
    void visit(const Parameter& p, std::vector<std::string>& value) override { text(p, "list", value); }
    void visit(const Parameter& p, TextField value) override { text(p, "text", {value.format()}); }
};

class SettingsVisitor : public TextVisitor {
public:
    std::vector<std::pair<std::string, std::string>> settings;
    void text(const Parameter& p, const std::string&, const std::vector<std::string>& values) override
    {
        if (p.recorded) // a manifest's settings are an object: a list is one entry, its items by spaces
            settings.emplace_back(p.name, join(values, " "));
    }
};

class DescribeVisitor : public TextVisitor {
public:
    std::vector<ParameterDescription> parameters;
    void text(const Parameter& p, const std::string& kind, const std::vector<std::string>& values) override
    {
        parameters.push_back({p, kind, join(values, " ")});
    }
};

class CheckVisitor : public ParameterVisitor {
public:
    std::vector<std::string> problems;

    void number(const Parameter& p, double value, const std::string& text)
    {
        const bool below = p.min && (p.open ? value <= *p.min : value < *p.min);
        const bool above = p.max && (p.open ? value >= *p.max : value > *p.max);
        if (!std::isfinite(value) || below || above) {
            std::string allowed = p.min && p.max && p.open
                ? "between " + shortestNumber(*p.min) + " and " + shortestNumber(*p.max) + ", exclusive"
                : p.min && p.max ? "from " + shortestNumber(*p.min) + " to " + shortestNumber(*p.max)
                : p.min          ? "at least " + shortestNumber(*p.min)
                : p.max          ? "at most " + shortestNumber(*p.max)
                                 : "a finite number";
            problems.push_back(p.name + " is " + text + "; it must be " + allowed);
        }
    }
    void item(const Parameter& p, const std::string& value)
    {
        if (!p.choices.empty() && !contains(p.choices, value))
            problems.push_back(p.name + " is '" + value + "'; it must be one of " + join(p.choices, ", "));
        else if (p.check)
            if (const std::string why = p.check(value); !why.empty())
                problems.push_back(p.name + " '" + value + "': " + why);
    }
    void visit(const Parameter&, bool&) override { }
    void visit(const Parameter& p, int& value) override { number(p, value, integerText(value)); }
    void visit(const Parameter& p, int64_t& value) override
    {
        number(p, static_cast<double>(value), integerText(value));
    }
    void visit(const Parameter& p, double& value) override { number(p, value, shortestNumber(value)); }
    void visit(const Parameter& p, std::string& value) override
    {
        if (value.empty()) {
            if (p.required)
                problems.push_back(p.name + " is needed");
            return;
        }
        item(p, value);
    }
    void visit(const Parameter& p, std::vector<std::string>& value) override
    {
        if (value.empty() && p.required)
            problems.push_back(p.name + " is needed");
        for (const auto& v : value)
            item(p, v);
    }
    void visit(const Parameter& p, TextField value) override { item(p, value.format()); }
};

} // namespace

std::vector<std::pair<std::string, std::string>> settingsOf(const std::function<void(ParameterVisitor&)>& visit)
{
    SettingsVisitor visitor;
    visit(visitor);
    return visitor.settings;
}

std::vector<ParameterDescription> describe(const std::function<void(ParameterVisitor&)>& visit)
{
    DescribeVisitor visitor;
    visit(visitor);
    return visitor.parameters;
}

std::vector<std::string> check(const std::function<void(ParameterVisitor&)>& visit)
{
    CheckVisitor visitor;
    visit(visitor);
    return visitor.problems;
}

} // namespace parameters_detail
} // namespace torchscope
