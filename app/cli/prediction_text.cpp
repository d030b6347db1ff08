#include "prediction_text.h"

#include <cmath>
#include <cstdio>
#include <iomanip>
#include <sstream>

namespace torchscope::cli {

std::string predictionHeading(OutputKind kind)
{
    return kind == OutputKind::Classes     ? "top-3 predictions"
        : kind == OutputKind::Segmentation ? "segmentation: classes by share of the pixels"
                                           : "detections (label, score, box x0,y0,x1,y1)";
}

std::string predictionText(const std::string& name, const ImagePrediction& p)
{
    std::ostringstream out;
    out << "  " << name << ":";
    if (p.kind == OutputKind::Detection) {
        if (p.detections.empty())
            out << "  nothing detected";
        for (const auto& d : p.detections)
            out << "\n    " << d.labelText << " " << std::fixed << std::setprecision(3) << d.score << "  "
                << std::setprecision(0) << d.x0 << "," << d.y0 << "," << d.x1 << "," << d.y1;
    } else {
        for (const auto& top : p.top)
            out << "  " << top.label << " " << std::fixed << std::setprecision(1) << 100.0 * top.probability << "%";
    }
    // The output's values beside the scores (a regression's age, a single logit): "[0] 43.42".
    for (const auto& reading : p.others) {
        out << "  " << reading.element;
        for (size_t i = 0; i < reading.values.size(); ++i)
            out << (i == 0 ? " " : ", ") << std::defaultfloat << std::setprecision(4) << reading.values[i];
    }
    out << '\n';
    return out.str();
}

std::string fixed(double value, int digits)
{
    if (std::isnan(value))
        return "n/a";
    char text[32];
    std::snprintf(text, sizeof text, "%.*f", digits, value);
    return text;
}

} // namespace torchscope::cli
