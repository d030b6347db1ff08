#include "attribution/integration_points.h"

#include "common/error.h"

#include <cmath>
#include <string>

namespace torchscope {
namespace {

constexpr double Pi = 3.14159265358979323846;

// numpy.polynomial.legendre.leggauss: nodes ascending in [-1, 1] and their weights, by Newton's
// method on the Legendre polynomial from Chebyshev starting points.
IntegrationPoints legendreGauss(int n)
{
    IntegrationPoints points;
    points.alphas.resize(static_cast<size_t>(n));
    points.weights.resize(static_cast<size_t>(n));
    for (int i = 0; i < (n + 1) / 2; ++i) {
        double x = std::cos(Pi * (i + 0.75) / (n + 0.5));
        double derivative = 0.0;
        for (int iteration = 0; iteration < 100; ++iteration) {
            double p0 = 1.0, p1 = x;
            for (int k = 2; k <= n; ++k) {
                const double p2 = ((2.0 * k - 1.0) * x * p1 - (k - 1.0) * p0) / k;
                p0 = p1;
                p1 = p2;
            }
            const double pn = n == 1 ? x : p1;
            const double pm = n == 1 ? 1.0 : p0;
            derivative = n * (x * pn - pm) / (x * x - 1.0);
            const double step = pn / derivative;
            x -= step;
            if (std::abs(step) < 1e-16)
                break;
        }
        const double weight = 2.0 / ((1.0 - x * x) * derivative * derivative);
        // x is the i-th largest root: mirror it for the ascending order numpy gives.
        points.alphas[static_cast<size_t>(n - 1 - i)] = x;
        points.alphas[static_cast<size_t>(i)] = -x;
        points.weights[static_cast<size_t>(n - 1 - i)] = weight;
        points.weights[static_cast<size_t>(i)] = weight;
    }
    return points;
}

std::vector<double> linspace(double first, double last, int n)
{
    std::vector<double> values(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i)
        values[static_cast<size_t>(i)] = n == 1 ? first : first + (last - first) * i / (n - 1);
    return values;
}

} // namespace

IntegrationRule parseIntegrationRule(const std::string& name)
{
    for (auto rule : {IntegrationRule::RiemannLeft, IntegrationRule::RiemannRight, IntegrationRule::RiemannMiddle,
             IntegrationRule::RiemannTrapezoid, IntegrationRule::GaussLegendre})
        if (integrationRuleName(rule) == name)
            return rule;
    throw Error("unknown integration rule '" + name
        + "'; expected gausslegendre, riemann_left, riemann_right, riemann_middle or riemann_trapezoid");
}

std::string integrationRuleName(IntegrationRule rule)
{
    switch (rule) {
    case IntegrationRule::RiemannLeft:
        return "riemann_left";
    case IntegrationRule::RiemannRight:
        return "riemann_right";
    case IntegrationRule::RiemannMiddle:
        return "riemann_middle";
    case IntegrationRule::RiemannTrapezoid:
        return "riemann_trapezoid";
    case IntegrationRule::GaussLegendre:
        return "gausslegendre";
    }
    return "gausslegendre";
}

IntegrationPoints integrationPoints(IntegrationRule rule, int n)
{
    if (n < 1 || (rule == IntegrationRule::RiemannTrapezoid && n < 2))
        throw Error("Integrated Gradients needs at least " + std::string(n < 1 ? "1 step" : "2 steps for the trapezoid")
            + ", got " + std::to_string(n));
    if (rule == IntegrationRule::GaussLegendre) {
        IntegrationPoints points = legendreGauss(n);
        for (size_t i = 0; i < points.alphas.size(); ++i) {
            points.alphas[i] = 0.5 * (1.0 + points.alphas[i]);
            points.weights[i] = 0.5 * points.weights[i];
        }
        return points;
    }
    IntegrationPoints points;
    points.weights.assign(static_cast<size_t>(n), 1.0 / n);
    switch (rule) {
    case IntegrationRule::RiemannTrapezoid:
        points.weights.front() /= 2;
        points.weights.back() /= 2;
        points.alphas = linspace(0.0, 1.0, n);
        break;
    case IntegrationRule::RiemannLeft:
        points.alphas = linspace(0.0, 1.0 - 1.0 / n, n);
        break;
    case IntegrationRule::RiemannMiddle:
        points.alphas = linspace(1.0 / (2.0 * n), 1.0 - 1.0 / (2.0 * n), n);
        break;
    default:
        points.alphas = linspace(1.0 / n, 1.0, n);
        break;
    }
    return points;
}

} // namespace torchscope
