#pragma once

// A request's parameters as a command's options (core/common/parameters.h): --NAME for each
// parameter its visit names (its underscores as dashes: attention_rule is --attention-rule), bound to the request's own
// field, with CLI11's validators made from the parameter's range, choices and check, and the request's initial value as
// the default --help shows. A repeatable parameter takes one value per occurrence ("--rule a --rule b").

#include "common/parameters.h"

#include <functional>
#include <set>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace torchscope::cli {

// Binds every parameter `visit` names, but those in `skip` (a command that takes one elsewhere).
// The fields must outlive the parse: bind a request the command keeps.
void bindParameters(
    CLI::App* command, const std::function<void(ParameterVisitor&)>& visit, const std::set<std::string>& skip = {});

// --out's format among `formats` (none: any) and its folder there; throws UsageError before anything runs.
void checkOut(const std::string& out, const std::string& command, const std::vector<std::string>& formats);

template <typename Request>
void bindRequest(CLI::App* command, Request& request, const std::set<std::string>& skip = {})
{
    bindParameters(
        command, [&request](ParameterVisitor& v) { request.visit(v); }, skip);
}

} // namespace torchscope::cli
