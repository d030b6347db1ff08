#pragma once

// Captum's approximation methods for Integrated Gradients' path integral: the points alpha in
// [0, 1] where the gradient is taken and the weight each gets.

#include <string>
#include <vector>

namespace torchscope {

enum class IntegrationRule { RiemannLeft, RiemannRight, RiemannMiddle, RiemannTrapezoid, GaussLegendre };
IntegrationRule parseIntegrationRule(const std::string& name); // "riemann_left" ... "gausslegendre"; throws
std::string integrationRuleName(IntegrationRule rule);

struct IntegrationPoints {
    std::vector<double> alphas;
    std::vector<double> weights;
};
// As captum.attr._utils.approximation_methods builds them (Gauss–Legendre: numpy's leggauss nodes
// and weights mapped from [-1, 1] to [0, 1]). Throws torchscope::Error for steps < 1 (< 2 for the
// trapezoid).
IntegrationPoints integrationPoints(IntegrationRule rule, int steps);

} // namespace torchscope
