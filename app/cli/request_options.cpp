#include "request_options.h"

#include "cli_options.h"
#include "common/error.h"
#include "common/strings.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <filesystem>
#include <limits>

namespace torchscope::cli {
namespace {

CLI::Validator checkOf(const Parameter& p)
{
    const auto check = p.check;
    return CLI::Validator([check](std::string& value) { return check(value); }, "");
}

// CLI11's Range with the parameter's bounds; an open side as wide as the type allows.
template <typename T> void addRange(CLI::Option* option, const Parameter& p)
{
    if (!p.min && !p.max)
        return;
    // An open side as the type's own limit (INT64_MAX through a double would not come back).
    const T low = p.min ? static_cast<T>(*p.min) : std::numeric_limits<T>::lowest();
    const T high = p.max ? static_cast<T>(*p.max) : std::numeric_limits<T>::max();
    if (!p.open) {
        option->check(CLI::Range(low, high));
        return;
    }
    option->check(CLI::Validator(
        [low, high](std::string& text) -> std::string {
            try {
                size_t used = 0;
                const double x = std::stod(text, &used);
                if (used == text.size() && x > low && x < high)
                    return {};
            } catch (const std::exception&) { }
            return "expected a number between " + shortestNumber(low) + " and " + shortestNumber(high)
                + " (exclusive), got '" + text + "'";
        },
        "(" + shortestNumber(low) + " - " + shortestNumber(high) + ")"));
}

void finish(CLI::Option* option, const Parameter& p)
{
    if (!p.choices.empty())
        option->check(CLI::IsMember(p.choices));
    if (p.check)
        option->check(checkOf(p));
    if (p.existingFolder)
        option->check(CLI::ExistingDirectory);
    if (p.required)
        option->required();
}

class Binder : public ParameterVisitor {
public:
    Binder(CLI::App* command, const std::set<std::string>& skip)
        : command_(command)
        , skip_(skip)
    { }

    void visit(const Parameter& p, bool& value) override
    {
        if (!skipped(p))
            command_->add_flag(flag(p), value, p.help);
    }
    void visit(const Parameter& p, int& value) override { number(p, value); }
    void visit(const Parameter& p, int64_t& value) override { number(p, value); }
    void visit(const Parameter& p, double& value) override { number(p, value); }
    void visit(const Parameter& p, std::string& value) override
    {
        if (skipped(p))
            return;
        CLI::Option* option = command_->add_option(flag(p), value, p.help);
        if (p.describesDefault && !value.empty())
            option->capture_default_str();
        finish(option, p);
    }
    void visit(const Parameter& p, std::vector<std::string>& value) override
    {
        if (skipped(p))
            return;
        finish(repeatable(command_, flag(p), value, p.help + " (repeatable)"), p); // one value per occurrence
    }
    void visit(const Parameter& p, TextField value) override
    {
        if (skipped(p))
            return;
        const auto parse = value.parse;
        CLI::Option* option = command_->add_option_function<std::string>(
            flag(p), [parse](const std::string& text) { parse(text); }, p.help);
        // Refused while parsing, with the reader's own words, before anything runs.
        option->check(CLI::Validator(
            [parse](std::string& text) -> std::string {
                try {
                    parse(text);
                } catch (const std::exception& e) {
                    return e.what();
                }
                return {};
            },
            ""));
        if (p.describesDefault)
            option->default_str(value.format());
        finish(option, p);
    }

private:
    bool skipped(const Parameter& p) const { return skip_.count(p.name) > 0; }
    // "attention_rule" (the manifest's key, Python's keyword) is --attention-rule.
    static std::string flag(const Parameter& p)
    {
        std::string name = p.name;
        std::replace(name.begin(), name.end(), '_', '-');
        return "--" + name;
    }

    template <typename T> void number(const Parameter& p, T& value)
    {
        if (skipped(p))
            return;
        CLI::Option* option = command_->add_option(flag(p), value, p.help);
        addRange<T>(option, p);
        if (p.describesDefault)
            option->capture_default_str();
        finish(option, p);
    }

    CLI::App* command_;
    const std::set<std::string>& skip_;
};

} // namespace

void bindParameters(
    CLI::App* command, const std::function<void(ParameterVisitor&)>& visit, const std::set<std::string>& skip)
{
    Binder binder(command, skip);
    visit(binder);
}

void checkOut(const std::string& out, const std::string& command, const std::vector<std::string>& formats)
{
    if (!formats.empty()
        && std::none_of(formats.begin(), formats.end(), [&](const std::string& f) { return endsWith(out, f); })) {
        std::vector<std::string> files;
        for (const auto& f : formats)
            files.push_back("FILE" + f);
        throw UsageError("--out '" + out + "': " + command + " writes " + join(files, ", "));
    }
    const std::filesystem::path folder = std::filesystem::absolute(out).parent_path();
    if (!std::filesystem::is_directory(folder))
        throw UsageError("--out '" + out + "': the folder '" + folder.string() + "' does not exist");
}

} // namespace torchscope::cli
