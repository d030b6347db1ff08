#include "graph/model_output.h"

#include "common/error.h"
#include "common/strings.h"
#include "common/tensor_conversion.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cctype>

namespace torchscope {
namespace {

OutputKind tensorKind(const at::Tensor& t)
{
    if (t.dim() == 2)
        return OutputKind::Classes;
    if (t.dim() == 4)
        return OutputKind::Segmentation;
    return OutputKind::Other;
}

bool isDetectionList(const c10::IValue& value)
{
    if (!value.isList())
        return false;
    const auto list = value.toList();
    if (list.empty())
        return list.elementType()->cast<c10::DictType>() != nullptr;
    const c10::IValue first = list.get(0);
    if (!first.isGenericDict())
        return false;
    for (const auto& entry : first.toGenericDict())
        if (entry.key().isString() && entry.key().toStringRef() == "boxes")
            return true;
    return false;
}

std::string describe(const c10::IValue& value)
{
    if (value.isTensor())
        return "Tensor " + shapeToString(value.toTensor().sizes().vec());
    if (value.isTuple()) {
        const auto type = value.type()->cast<c10::TupleType>();
        const auto names = type ? type->names() : c10::nullopt;
        std::vector<std::string> parts;
        const auto& elements = value.toTupleRef().elements();
        for (size_t i = 0; i < elements.size(); ++i)
            parts.push_back((names ? std::string((*names)[i]) + ": " : std::string()) + describe(elements[i]));
        const std::string name = type && type->name() ? type->name()->name() : std::string("tuple");
        return name + "(" + join(parts, ", ") + ")";
    }
    if (value.isGenericDict()) {
        std::vector<std::string> parts;
        for (const auto& entry : value.toGenericDict())
            parts.push_back((entry.key().isString() ? entry.key().toStringRef() : std::string("?")) + ": "
                + describe(entry.value()));
        return "dict{" + join(parts, ", ") + "}";
    }
    if (isDetectionList(value))
        return "detections (List[Dict] of boxes, labels, scores)";
    return value.type()->annotation_str();
}

ScoreOutput fromValue(const c10::IValue& value, const std::string& element, const std::string& described)
{
    ScoreOutput out;
    out.element = element;
    out.described = described;
    if (value.isTensor()) {
        out.scores = value.toTensor();
        out.kind = tensorKind(out.scores);
    } else if (isDetectionList(value)) {
        out.kind = OutputKind::Detection;
        out.detections = value;
    }
    return out;
}

bool isClassScores(const c10::IValue& value)
{
    return value.isTensor() && value.toTensor().dim() == 2 && value.toTensor().size(1) >= 2;
}

// Candidates in order: name and value. The first [N, C >= 2] tensor (an [N, 1] element is a value, an age
// beside a gender's scores), else detections, else [N, C, H, W], else the first [N, 1].
ScoreOutput firstScores(
    const std::vector<std::pair<std::string, c10::IValue>>& candidates, const std::string& described)
{
    for (const auto& [name, value] : candidates)
        if (isClassScores(value))
            return fromValue(value, name, described);
    for (const auto& [name, value] : candidates)
        if (isDetectionList(value))
            return fromValue(value, name, described);
    for (const auto& [name, value] : candidates)
        if (value.isTensor() && value.toTensor().dim() == 4)
            return fromValue(value, name, described);
    for (const auto& [name, value] : candidates)
        if (value.isTensor() && value.toTensor().dim() == 2)
            return fromValue(value, name, described);
    ScoreOutput none;
    none.described = described;
    return none;
}

std::vector<std::pair<std::string, c10::IValue>> elementsOf(const c10::IValue& output)
{
    std::vector<std::pair<std::string, c10::IValue>> elements;
    if (output.isTuple()) {
        const auto type = output.type()->cast<c10::TupleType>();
        const auto names = type ? type->names() : c10::nullopt;
        const auto& values = output.toTupleRef().elements();
        for (size_t i = 0; i < values.size(); ++i)
            elements.emplace_back(names ? std::string((*names)[i]) : "[" + std::to_string(i) + "]", values[i]);
    } else if (output.isGenericDict()) {
        for (const auto& entry : output.toGenericDict())
            if (entry.key().isString())
                elements.emplace_back(entry.key().toStringRef(), entry.value());
    }
    return elements;
}

bool isIndex(const std::string& text)
{
    std::string digits = text;
    if (digits.size() > 2 && digits.front() == '[' && digits.back() == ']')
        digits = digits.substr(1, digits.size() - 2);
    return !digits.empty() && std::all_of(digits.begin(), digits.end(), [](char c) { return std::isdigit(c); });
}

size_t indexOf(const std::string& text)
{
    return std::stoul(text.front() == '[' ? text.substr(1, text.size() - 2) : text);
}

std::string withThousands(int64_t n)
{
    std::string digits = std::to_string(n), out;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i && (digits.size() - i) % 3 == 0)
            out += ',';
        out += digits[i];
    }
    return out;
}

// "class 3", or "class 3 (cat)" with labels.
std::string classText(const std::vector<std::string>& labels, int64_t index)
{
    const std::string text = "class " + std::to_string(index);
    return static_cast<size_t>(index) < labels.size() ? text + " (" + labels[static_cast<size_t>(index)] + ")" : text;
}

} // namespace

std::string outputKindName(OutputKind kind)
{
    switch (kind) {
    case OutputKind::Classes:
        return "class scores";
    case OutputKind::Segmentation:
        return "segmentation";
    case OutputKind::Detection:
        return "detections";
    case OutputKind::Other:
        break;
    }
    return "other";
}

std::string labelOf(const std::vector<std::string>& labels, int64_t index)
{
    return index >= 0 && static_cast<size_t>(index) < labels.size() ? labels[static_cast<size_t>(index)]
                                                                    : "class " + std::to_string(index);
}

ScoreOutput findScores(const c10::IValue& output, const std::string& element)
{
    const std::string described = describe(output);
    const auto elements = elementsOf(output);
    if (element.empty()) {
        if (output.isGenericDict())
            for (const auto& [name, value] : elements)
                if (name == "out")
                    return fromValue(value, name, described);
        if (output.isTuple() || output.isGenericDict())
            return firstScores(elements, described);
        return fromValue(output, "", described);
    }
    if (elements.empty())
        throw Error("the scores element '" + element + "' was asked for, but the model's output is " + described
            + ", which has no elements");
    if (output.isTuple() && isIndex(element)) {
        const size_t i = indexOf(element);
        if (i >= elements.size())
            throw Error("the scores element " + element + " is out of range: the output is " + described + " with "
                + std::to_string(elements.size()) + " elements");
        return fromValue(elements[i].second, elements[i].first, described);
    }
    std::vector<std::string> names;
    for (const auto& [name, value] : elements) {
        if (name == element)
            return fromValue(value, name, described);
        names.push_back(name);
    }
    throw Error("the model's output has no element '" + element + "': it is " + described
        + " (elements: " + join(names, ", ") + ")");
}

TargetScore targetScore(const ScoreOutput& output, const GradientTarget& target, const std::vector<std::string>& labels)
{
    TargetScore result;
    if (output.kind == OutputKind::Classes) {
        const at::Tensor& logits = output.scores;
        result.index = target.index >= 0 ? target.index : logits.detach().sum(0).argmax().item<int64_t>();
        if (result.index >= logits.size(1))
            throw Error("target class " + std::to_string(result.index) + " is out of range: the output has "
                + std::to_string(logits.size(1)) + " classes");
        result.score = logits.select(1, result.index).sum();
        result.description = classText(labels, result.index);
        return result;
    }
    if (output.kind == OutputKind::Segmentation) {
        const at::Tensor& scores = output.scores; // [N, C, H, W]
        const int64_t classes = scores.size(1), height = scores.size(2), width = scores.size(3);
        const at::Tensor predicted = scores.detach().argmax(1); // [N, H, W]
        if (target.index >= 0) {
            result.index = target.index;
        } else {
            const at::Tensor counts = at::bincount(predicted.flatten().cpu(), {}, classes);
            result.index = counts.numel() > 1 && counts.slice(0, 1).max().item<int64_t>() > 0
                ? counts.slice(0, 1).argmax().item<int64_t>() + 1
                : 0;
        }
        if (result.index >= classes)
            throw Error("target class " + std::to_string(result.index) + " is out of range: the output has "
                + std::to_string(classes) + " classes");
        at::Tensor mask;
        std::string where;
        if (target.region) {
            const auto [x0, y0, x1, y1] = *target.region;
            if (x0 < 0 || y0 < 0 || x1 > width || y1 > height || x0 >= x1 || y0 >= y1)
                throw Error("the region " + std::to_string(x0) + "," + std::to_string(y0) + "," + std::to_string(x1)
                    + "," + std::to_string(y1) + " is not inside the " + std::to_string(width) + "x"
                    + std::to_string(height) + " output (x0,y0,x1,y1 with x0 < x1, y0 < y1)");
            mask = at::zeros_like(predicted, scores.options());
            mask.slice(1, y0, y1).slice(2, x0, x1).fill_(1);
            where = "over the region " + std::to_string(x0) + "," + std::to_string(y0) + "-" + std::to_string(x1) + ","
                + std::to_string(y1);
        } else {
            mask = (predicted == result.index).to(scores.scalar_type());
            const auto pixels = mask.sum().item<int64_t>();
            if (pixels == 0)
                throw Error(classText(labels, result.index)
                    + " is predicted at no pixel of this image: choose a class the image shows, or a region");
            where = "over its " + withThousands(pixels) + " pixels";
        }
        result.score = (scores.select(1, result.index) * mask).sum();
        result.description = classText(labels, result.index) + " summed " + where;
        return result;
    }
    if (output.kind == OutputKind::Detection) {
        const auto list = output.detections.toList();
        if (list.empty())
            throw Error("the model returned no images' detections");
        const auto detections = list.get(0).toGenericDict();
        const at::Tensor scores = detections.at("scores").toTensor();
        result.index = std::max<int64_t>(0, target.index);
        if (scores.numel() == 0)
            throw Error("the model detected nothing in this image (no box above its score threshold), so there is "
                        "no detection score to take the gradient of");
        if (result.index >= scores.numel())
            throw Error("detection " + std::to_string(result.index) + " does not exist: the model found "
                + std::to_string(scores.numel()) + " in this image");
        result.score = scores[result.index];
        const int64_t label = detections.at("labels").toTensor()[result.index].item<int64_t>();
        result.description = "detection " + std::to_string(result.index) + " (" + labelOf(labels, label) + ", score "
            + std::to_string(result.score.item<double>()).substr(0, 5) + ")";
        return result;
    }
    throw Error("gradients are taken of a score in the model's output, but it holds no class scores ([batch, "
                "classes]), segmentation ([batch, classes, H, W]) or detections: it is "
        + output.described + "; name the element with the scores in the input setup (\"scores\")");
}

ImagePrediction predictImage(const ScoreOutput& output, int64_t image, const std::vector<std::string>& labels, int k)
{
    ImagePrediction prediction;
    prediction.kind = output.kind;
    prediction.element = output.element;
    if (output.kind == OutputKind::Classes && output.scores.size(1) == 1) {
        // One score is a value (a regression's age, a single logit), not a class at 100 %.
        const at::Tensor value = output.scores[image].detach().to(at::kCPU, at::kDouble);
        prediction.others.push_back({output.element.empty() ? "output" : output.element, {value[0].item<double>()}});
    } else if (output.kind == OutputKind::Classes) {
        const at::Tensor p = output.scores[image].detach().to(at::kCPU, at::kFloat).softmax(0);
        const auto [values, indices] = p.topk(std::min<int64_t>(k, p.size(0)));
        for (int64_t i = 0; i < values.size(0); ++i) {
            const int64_t c = indices[i].item<int64_t>();
            prediction.top.push_back({c, labelOf(labels, c), values[i].item<double>()});
        }
    } else if (output.kind == OutputKind::Segmentation) {
        const at::Tensor scores = output.scores[image].detach().to(at::kCPU, at::kFloat);
        const at::Tensor map = scores.argmax(0);
        prediction.classMap = toFloatTensor(map.to(at::kFloat));
        const at::Tensor share = at::bincount(map.flatten(), {}, scores.size(0)).to(at::kDouble) / double(map.numel());
        const auto [values, indices] = share.topk(std::min<int64_t>(k, share.size(0)));
        for (int64_t i = 0; i < values.size(0); ++i)
            if (values[i].item<double>() > 0)
                prediction.top.push_back({indices[i].item<int64_t>(), labelOf(labels, indices[i].item<int64_t>()),
                    values[i].item<double>()});
    } else if (output.kind == OutputKind::Detection) {
        const auto list = output.detections.toList();
        if (image < static_cast<int64_t>(list.size())) {
            const auto d = list.get(static_cast<size_t>(image)).toGenericDict();
            const at::Tensor boxes = d.at("boxes").toTensor().detach().to(at::kCPU, at::kFloat);
            const at::Tensor classes = d.at("labels").toTensor().to(at::kCPU);
            const at::Tensor scores = d.at("scores").toTensor().detach().to(at::kCPU, at::kDouble);
            const int64_t shown = std::min<int64_t>(scores.numel(), 4 * k);
            for (int64_t i = 0; i < shown; ++i) {
                DetectionBox box;
                box.x0 = boxes[i][0].item<float>();
                box.y0 = boxes[i][1].item<float>();
                box.x1 = boxes[i][2].item<float>();
                box.y1 = boxes[i][3].item<float>();
                box.label = classes[i].item<int64_t>();
                box.labelText = labelOf(labels, box.label);
                box.score = scores[i].item<double>();
                prediction.detections.push_back(box);
                prediction.top.push_back({box.label, box.labelText, box.score});
            }
        }
    }
    return prediction;
}

std::vector<OutputReading> outputReadings(const c10::IValue& output, const std::string& scoresElement, int64_t image)
{
    constexpr int64_t Most = 16;
    std::vector<OutputReading> readings;
    for (const auto& [name, value] : elementsOf(output)) {
        if (name == scoresElement || !value.isTensor())
            continue;
        const at::Tensor t = value.toTensor();
        if (!t.is_floating_point() || t.dim() < 1 || t.size(0) <= image || t.numel() / t.size(0) > Most)
            continue;
        const at::Tensor row = t[image].detach().to(at::kCPU, at::kDouble).contiguous().flatten();
        readings.push_back({name, std::vector<double>(row.data_ptr<double>(), row.data_ptr<double>() + row.numel())});
    }
    return readings;
}

c10::IValue detachedValue(const c10::IValue& value)
{
    if (value.isTensor())
        return value.toTensor().detach();
    if (value.isTuple()) {
        std::vector<c10::IValue> elements;
        for (const auto& e : value.toTupleRef().elements())
            elements.push_back(detachedValue(e));
        return c10::ivalue::Tuple::createNamed(std::move(elements), value.type());
    }
    if (value.isGenericDict()) {
        const auto dict = value.toGenericDict();
        c10::impl::GenericDict copy(dict.keyType(), dict.valueType());
        for (const auto& entry : dict)
            copy.insert(entry.key(), detachedValue(entry.value()));
        return copy;
    }
    if (value.isList()) {
        const auto list = value.toList();
        c10::impl::GenericList copy(list.elementType());
        for (size_t i = 0; i < list.size(); ++i)
            copy.push_back(detachedValue(list.get(i)));
        return copy;
    }
    return value;
}

} // namespace torchscope
