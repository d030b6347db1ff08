#include "relevance/relevance_rules.h"

#include "common/error.h"
#include "common/strings.h"

#include <cctype>
#include <cmath>
#include <sstream>

namespace torchscope {
namespace {

struct RuleName {
    const char* name;
    RuleKind kind;
    int parameters; // how many ":value" it takes at most
};

const RuleName RuleNames[] = {
    {"epsilon", RuleKind::Epsilon, 1},
    {"gamma", RuleKind::Gamma, 1},
    {"zplus", RuleKind::ZPlus, 0},
    {"alphabeta", RuleKind::AlphaBeta, 2},
    {"flat", RuleKind::Flat, 0},
    {"wsquare", RuleKind::WSquare, 0},
    {"zbox", RuleKind::ZBox, 0},
    {"norm", RuleKind::Norm, 0},
    {"pass", RuleKind::Pass, 0},
    {"gradient", RuleKind::Gradient, 0},
};

std::string ruleNameList()
{
    std::vector<std::string> names;
    for (const auto& rule : RuleNames)
        names.push_back(rule.name);
    return join(names, ", ");
}

double number(const std::string& text, const std::string& rule)
{
    try {
        size_t used = 0;
        const double value = std::stod(text, &used);
        if (used == text.size() && std::isfinite(value))
            return value;
    } catch (const std::exception&) { }
    throw Error("relevance rule '" + rule + "': '" + text + "' is not a number");
}

// Every digit a value needs: rules compare (and the rewritten graph is cached) by this text.
std::string shortNumber(double value)
{
    return shortestNumber(value);
}

} // namespace

RelevanceRule RelevanceRule::parse(const std::string& text)
{
    const std::vector<std::string> parts = split(text, ':');
    const RuleName* found = nullptr;
    for (const auto& rule : RuleNames)
        if (!parts.empty() && parts[0] == rule.name)
            found = &rule;
    if (!found)
        throw Error("unknown relevance rule '" + text + "'; expected one of " + ruleNameList()
            + " (with a value where it takes one: epsilon:0.25, gamma:0.1, alphabeta:2:1)");
    if (static_cast<int>(parts.size()) - 1 > found->parameters)
        throw Error("relevance rule '" + text + "': " + found->name + " takes "
            + (found->parameters == 0 ? std::string("no value")
                                      : "at most " + std::to_string(found->parameters) + " value(s)"));
    RelevanceRule rule;
    rule.kind = found->kind;
    if (rule.kind == RuleKind::Epsilon && parts.size() > 1) {
        rule.epsilon = number(parts[1], text);
        if (rule.epsilon < 0)
            throw Error("relevance rule '" + text + "': epsilon must be 0 or more");
    }
    if (rule.kind == RuleKind::Gamma && parts.size() > 1) {
        rule.gamma = number(parts[1], text);
        if (rule.gamma < 0)
            throw Error("relevance rule '" + text + "': gamma must be 0 or more");
    }
    if (rule.kind == RuleKind::AlphaBeta) {
        if (parts.size() > 1)
            rule.alpha = number(parts[1], text);
        rule.beta = parts.size() > 2 ? number(parts[2], text) : rule.alpha - 1.0;
        if (rule.alpha < 0 || rule.beta < 0 || std::abs(rule.alpha - rule.beta - 1.0) > 1e-12)
            throw Error(
                "relevance rule '" + text + "': alpha and beta must be 0 or more with alpha - beta = 1 (2:1, 1:0)");
    }
    return rule;
}

std::string RelevanceRule::toString() const
{
    for (const auto& rule : RuleNames)
        if (rule.kind == kind) {
            std::string text = rule.name;
            if (kind == RuleKind::Epsilon)
                text += ":" + shortNumber(epsilon);
            else if (kind == RuleKind::Gamma)
                text += ":" + shortNumber(gamma);
            else if (kind == RuleKind::AlphaBeta)
                text += ":" + shortNumber(alpha) + ":" + shortNumber(beta);
            return text;
        }
    return "?";
}

bool RelevanceRule::operator==(const RelevanceRule& other) const
{
    return toString() == other.toString();
}

const std::vector<std::string>& compositeNames()
{
    static const std::vector<std::string> names{"epsilon_plus_flat", "epsilon_plus", "epsilon_alpha2_beta1",
        "epsilon_alpha2_beta1_flat", "epsilon_gamma_box", "epsilon", "epsilon0"};
    return names;
}

RelevanceRule compositeRule(const std::string& composite, LayerKind kind, bool first)
{
    RelevanceRule rule; // epsilon, 1e-6: Zennit's for dense layers in every composite
    const bool convolution = kind == LayerKind::Convolution;
    if (composite == "epsilon")
        return rule;
    if (composite == "epsilon0") {
        rule.epsilon = 0.0;
        return rule;
    }
    if (composite == "epsilon_plus_flat" || composite == "epsilon_alpha2_beta1_flat") {
        if (first) // any linear layer, dense ones too
            rule.kind = RuleKind::Flat;
        else if (convolution)
            rule.kind = composite == "epsilon_plus_flat" ? RuleKind::ZPlus : RuleKind::AlphaBeta;
        return rule;
    }
    if (composite == "epsilon_plus") {
        if (convolution)
            rule.kind = RuleKind::ZPlus;
        return rule;
    }
    if (composite == "epsilon_alpha2_beta1") {
        if (convolution)
            rule.kind = RuleKind::AlphaBeta;
        return rule;
    }
    if (composite == "epsilon_gamma_box") {
        if (convolution)
            rule.kind = first ? RuleKind::ZBox : RuleKind::Gamma;
        return rule;
    }
    throw Error("unknown relevance composite '" + composite + "'; expected one of " + join(compositeNames(), ", "));
}

const std::vector<std::string>& attentionRuleNames()
{
    static const std::vector<std::string> names{"cp", "attnlrp"};
    return names;
}

void visitLrpChoices(ParameterVisitor& v, std::string& composite, std::string& attentionRule)
{
    v.visit(Parameter("composite",
                "lrp: the rules by layer, as Zennit's composites: " + join(compositeNames(), ", ")
                    + " (epsilon_gamma_box's zbox bounds come from the input setup)")
                .oneOf(compositeNames()),
        composite);
    v.visit(Parameter("attention_rule",
                "lrp: how relevance crosses attention, as LXT defines it: cp (CP-LRP: the attention weights held "
                "fixed, relevance through the values) or attnlrp (AttnLRP: the uniform rule on q·k and A·v, the "
                "softmax by gradient × input)")
                .oneOf(attentionRuleNames()),
        attentionRule);
}

Parameter ruleOverrideParameter()
{
    return Parameter("rule", "PATH=RULE: the layers PATH names take RULE instead of the composite's")
        .checkedBy([](const std::string& text) -> std::string {
            try {
                RuleOverride::parse(text);
            } catch (const std::exception& e) {
                return e.what();
            }
            return {};
        });
}

RuleOverride RuleOverride::parse(const std::string& text)
{
    const auto equals = text.rfind('=');
    if (equals == std::string::npos || equals == 0 || equals + 1 == text.size())
        throw Error("--rule '" + text
            + "': expected PATH=RULE (features.0=flat, layer4.*=gamma:0.1, type:Linear=epsilon:0.25)");
    RuleOverride out;
    out.selector = text.substr(0, equals);
    out.rule = RelevanceRule::parse(text.substr(equals + 1));
    return out;
}

std::vector<std::string> RuleOverride::parseList(const std::string& text)
{
    std::vector<std::string> out;
    std::string current;
    const auto flush = [&] {
        if (!current.empty()) {
            parse(current);
            out.push_back(current);
            current.clear();
        }
    };
    for (const char c : text) {
        if (c == ';' || std::isspace(static_cast<unsigned char>(c)))
            flush();
        else
            current += c;
    }
    flush();
    return out;
}

std::string RuleOverride::toString() const
{
    return selector + "=" + rule.toString();
}

std::string RelevanceSettings::cacheKey() const
{
    std::ostringstream key;
    key << composite << ';' << attention;
    for (const auto& o : overrides)
        key << ';' << o.toString();
    key << ";low";
    for (double v : low)
        key << ',' << shortestNumber(v);
    key << ";high";
    for (double v : high)
        key << ',' << shortestNumber(v);
    return key.str();
}

} // namespace torchscope
