#include "concepts/concept_scores.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace torchscope {

namespace {

constexpr double NaN = std::numeric_limits<double>::quiet_NaN();

// Indices of `scores` (NaN last) best first, at most `keep`.
std::vector<int64_t> bestFirst(const double* scores, int64_t count, int64_t keep, const std::vector<bool>& allowed)
{
    std::vector<int64_t> order;
    for (int64_t i = 0; i < count; ++i)
        if (allowed[static_cast<size_t>(i)] && !std::isnan(scores[i]))
            order.push_back(i);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return scores[a] > scores[b]; });
    if (static_cast<int64_t>(order.size()) > keep)
        order.resize(static_cast<size_t>(keep));
    return order;
}

struct Formula {
    std::string text;
    bool composite = false;
    std::vector<int32_t> used;
    at::Tensor truth; // [G] float64 of 0 and 1: which combinations of concepts satisfy it
    double iou = 0.0, intersection = 0.0, area = 0.0;
};

// Which combinations of concepts satisfy `formula` op `other` (truths of 0 and 1; `other` may be
// [K, G], every concept at once): AND, OR, AND NOT.
at::Tensor joined(int op, const at::Tensor& formula, const at::Tensor& other)
{
    if (op == 0)
        return formula * other;
    if (op == 1)
        return formula + other - formula * other;
    return formula * (1.0 - other);
}

} // namespace

InvertScores invertScores(const at::Tensor& values, const at::Tensor& labels)
{
    const at::Tensor x = values.to(at::kCPU, at::kDouble).contiguous();
    const int64_t n = x.size(0), units = x.size(1);
    const auto [sorted, order] = x.sort(0);
    at::Tensor ranks = at::empty({n, units}, at::kDouble);
    at::Tensor ties = at::zeros({units}, at::kDouble);
    const auto s = sorted.accessor<double, 2>();
    const auto o = order.accessor<int64_t, 2>();
    auto r = ranks.accessor<double, 2>();
    auto t = ties.accessor<double, 1>();
    for (int64_t u = 0; u < units; ++u) {
        for (int64_t i = 0; i < n;) {
            int64_t j = i + 1;
            while (j < n && s[j][u] == s[i][u])
                ++j;
            const double average = static_cast<double>(i + 1 + j) / 2.0; // ranks i+1 .. j
            for (int64_t k = i; k < j; ++k)
                r[o[k][u]][u] = average;
            const auto size = static_cast<double>(j - i);
            t[u] += size * size * size - size;
            i = j;
        }
    }
    const at::Tensor y = labels.to(at::kCPU, at::kDouble);
    const at::Tensor n1 = y.sum(1, true); // [K, 1]
    const at::Tensor n0 = static_cast<double>(n) - n1;
    const at::Tensor u1 = y.mm(ranks) - n1 * (n1 + 1.0) / 2.0; // [K, U]
    InvertScores scores;
    const at::Tensor valid = (n1 > 0) & (n0 > 0);
    scores.auc = at::where(valid, u1 / (n1 * n0), NaN);
    const auto nd = static_cast<double>(n);
    const at::Tensor variance = n1 * n0 / 12.0 * ((nd + 1.0) - ties.unsqueeze(0) / (nd * (nd - 1.0)));
    const at::Tensor z = (u1 - n1 * n0 / 2.0 - 0.5) / variance.sqrt();
    scores.p = at::where(valid & (variance > 0), 0.5 * at::erfc(z / std::sqrt(2.0)), NaN);
    const at::Tensor scored = valid.squeeze(1).contiguous();
    for (int64_t k = 0; k < scored.size(0); ++k)
        scores.scored.push_back(scored[k].item<bool>());
    return scores;
}

void labelInvert(DissectedLayer& layer, const InvertScores& scores, const DissectionRequest& request,
    const std::vector<std::string>& names)
{
    const int64_t concepts = scores.auc.size(0), units = scores.auc.size(1);
    const auto tests = static_cast<double>(units * std::count(scores.scored.begin(), scores.scored.end(), true));
    const at::Tensor auc = scores.auc.t().contiguous(), p = scores.p.t().contiguous();
    for (int64_t u = 0; u < units; ++u) {
        DissectedUnit& unit = layer.unitResults[static_cast<size_t>(u)];
        const double* aucRow = auc.data_ptr<double>() + u * concepts;
        const double* pRow = p.data_ptr<double>() + u * concepts;
        unit.invert.clear();
        for (const int64_t c : bestFirst(aucRow, concepts, request.top, scores.scored)) {
            UnitConcept entry;
            entry.conceptId = static_cast<int32_t>(c);
            entry.label = names[static_cast<size_t>(c)];
            entry.score = aucRow[c];
            entry.uncorrectedP = pRow[c];
            entry.pValue = std::isnan(pRow[c]) ? NaN : std::min(1.0, pRow[c] * tests);
            unit.invert.push_back(entry);
        }
        unit.interpretableInvert = !unit.invert.empty() && unit.invert.front().score >= request.aucThreshold
            && unit.invert.front().pValue < request.alpha;
    }
}

IouScores iouScores(const at::Tensor& counts, const at::Tensor& pixels, const at::Tensor& incidence,
    const at::Tensor& unitArea, const at::Tensor& unitAreaAll, const at::Tensor& categoryOf)
{
    IouScores scores;
    scores.intersection = counts.mm(incidence);
    scores.conceptArea = pixels.matmul(incidence);
    scores.unitArea = unitArea.numel() > 0 ? unitArea.index_select(1, categoryOf)
                                           : unitAreaAll.unsqueeze(1).expand_as(scores.intersection);
    const at::Tensor unions = scores.unitArea + scores.conceptArea.unsqueeze(0) - scores.intersection;
    scores.iou = at::where(unions > 0, scores.intersection / unions, 0.0).contiguous();
    return scores;
}

void labelIou(DissectedLayer& layer, const IouScores& scores, const DissectionRequest& request,
    const std::vector<std::string>& names)
{
    const int64_t units = scores.iou.size(0), concepts = scores.iou.size(1);
    std::vector<bool> present;
    for (int64_t c = 0; c < concepts; ++c)
        present.push_back(scores.conceptArea[c].item<double>() > 0);
    const auto intersection = scores.intersection.accessor<double, 2>();
    const auto unitArea = scores.unitArea.accessor<double, 2>();
    const auto conceptArea = scores.conceptArea.accessor<double, 1>();
    for (int64_t u = 0; u < units; ++u) {
        DissectedUnit& unit = layer.unitResults[static_cast<size_t>(u)];
        const double* row = scores.iou.data_ptr<double>() + u * concepts;
        unit.iou.clear();
        for (const int64_t c : bestFirst(row, concepts, request.top, present)) {
            UnitConcept entry;
            entry.conceptId = static_cast<int32_t>(c);
            entry.label = names[static_cast<size_t>(c)];
            entry.score = row[c];
            entry.intersection = std::llround(intersection[u][c]);
            entry.unitArea = std::llround(unitArea[u][c]);
            entry.conceptArea = std::llround(conceptArea[c]);
            unit.iou.push_back(entry);
        }
        unit.interpretableIou = !unit.iou.empty() && unit.iou.front().score > request.iouThreshold;
    }
}

void searchFormulas(DissectedLayer& layer, const at::Tensor& counts, const at::Tensor& pixels,
    const at::Tensor& incidence, const at::Tensor& unitAreaAll, const DissectionRequest& request,
    const std::vector<std::string>& names)
{
    const at::Tensor singles = incidence.t().contiguous(); // [K, G]
    const int64_t concepts = singles.size(0);
    const char* operations[] = {"AND", "OR", "AND NOT"};
    for (auto& unit : layer.unitResults) {
        const at::Tensor h = counts[unit.unit];
        const double total = unitAreaAll[unit.unit].item<double>();
        const auto score = [&](const at::Tensor& truth, Formula& f) {
            f.intersection = truth.dot(h).item<double>();
            f.area = truth.dot(pixels).item<double>();
            const double unions = total + f.area - f.intersection;
            f.iou = unions > 0 ? f.intersection / unions : 0.0;
        };
        // The beam starts from the best single concepts (IoU over every image's unit pixels).
        const at::Tensor singleIntersection = singles.mv(h), singleArea = singles.mv(pixels);
        const at::Tensor singleIou = at::where(total + singleArea - singleIntersection > 0,
            singleIntersection / (total + singleArea - singleIntersection), 0.0)
                                         .contiguous();
        std::vector<bool> present;
        for (int64_t c = 0; c < concepts; ++c)
            present.push_back(singleArea[c].item<double>() > 0);
        std::vector<Formula> beam;
        for (const int64_t c : bestFirst(singleIou.data_ptr<double>(), concepts, request.beam, present)) {
            Formula f;
            f.text = names[static_cast<size_t>(c)];
            f.used = {static_cast<int32_t>(c)};
            f.truth = singles[c];
            score(f.truth, f);
            beam.push_back(std::move(f));
        }
        for (int64_t length = 2; length <= request.formulaLength && !beam.empty(); ++length) {
            struct Candidate {
                size_t parent;
                int op;
                int64_t conceptId;
                double iou;
            };
            std::vector<Candidate> candidates;
            for (size_t b = 0; b < beam.size(); ++b) {
                const at::Tensor& truth = beam[b].truth;
                for (int op = 0; op < 3; ++op) {
                    const at::Tensor made = joined(op, truth, singles);
                    const at::Tensor inter = made.mv(h), area = made.mv(pixels);
                    const at::Tensor unions = total + area - inter;
                    const at::Tensor iou = at::where(unions > 0, inter / unions, 0.0).contiguous();
                    const double* values = iou.data_ptr<double>();
                    for (int64_t c = 0; c < concepts; ++c)
                        if (present[static_cast<size_t>(c)]
                            && std::find(beam[b].used.begin(), beam[b].used.end(), c) == beam[b].used.end())
                            candidates.push_back({b, op, c, values[c]});
                }
            }
            std::stable_sort(candidates.begin(), candidates.end(),
                [](const Candidate& a, const Candidate& b) { return a.iou > b.iou; });
            std::vector<Formula> next = beam; // a longer formula only where it does better
            for (const auto& candidate : candidates) {
                if (static_cast<int64_t>(next.size()) >= 2 * request.beam)
                    break;
                const Formula& parent = beam[candidate.parent];
                const at::Tensor single = singles[candidate.conceptId];
                Formula f;
                f.text = (parent.composite ? "(" + parent.text + ")" : parent.text) + " " + operations[candidate.op]
                    + " " + names[static_cast<size_t>(candidate.conceptId)];
                f.composite = true;
                f.used = parent.used;
                f.used.push_back(static_cast<int32_t>(candidate.conceptId));
                f.truth = joined(candidate.op, parent.truth, single);
                score(f.truth, f);
                next.push_back(std::move(f));
            }
            std::stable_sort(
                next.begin(), next.end(), [](const Formula& a, const Formula& b) { return a.iou > b.iou; });
            if (static_cast<int64_t>(next.size()) > request.beam)
                next.resize(static_cast<size_t>(request.beam));
            beam = std::move(next);
        }
        if (beam.empty())
            continue;
        const Formula& best = beam.front();
        unit.formula.conceptId = best.composite ? -1 : best.used.front();
        unit.formula.label = best.text;
        unit.formula.score = best.iou;
        unit.formula.intersection = std::llround(best.intersection);
        unit.formula.unitArea = std::llround(total);
        unit.formula.conceptArea = std::llround(best.area);
    }
}

} // namespace torchscope
