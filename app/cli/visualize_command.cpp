#include "visualize_command.h"

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/strings.h"
#include "export/pt_export.h"
#include "graph/engine.h"
#include "image_inputs.h"
#include "imaging/contact_sheet.h"
#include "imaging/image_decoder.h"
#include "imaging/image_tensor.h"
#include "model/model.h"
#include "open_model.h"
#include "prediction_text.h"
#include "record/recorder.h"
#include "record/recording_files.h"
#include "visualize/activation_maximization.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <thread>

#include <unistd.h>

namespace torchscope::cli {
namespace {

namespace fs = std::filesystem;
std::atomic_bool interrupted{false};

int64_t wholeNumber(const std::string& option, const std::string& text)
{
    try {
        size_t used = 0;
        const long long value = std::stoll(text, &used);
        if (used == text.size() && value >= 0)
            return value;
    } catch (const std::exception&) { }
    throw UsageError("visualize: " + option + ": '" + text + "' is not a whole number (0 or more)");
}

// The layer's channel count, from one run on a grey image of the setup's size.
int64_t channelCount(Engine& engine, const Preprocessing& preprocessing, const std::string& layer, int size)
{
    const int64_t height = size > 0 ? size : preprocessing.outputHeight();
    const int64_t width = size > 0 ? size : preprocessing.outputWidth();
    if (height <= 0 || width <= 0)
        throw Error("the model's setup does not fix its input size: give --size");
    Request request;
    request.grabOutput(layer);
    const at::Tensor grey = at::full({1, preprocessing.grayscale ? 1 : 3, height, width}, 0.5);
    const RunResult result = engine.run(request, forwardInputsFromBatch(engine.model(), grey));
    const at::Tensor value = result.tensor(layer);
    return value.dim() == 3 ? value.size(2) : value.size(1);
}

// "3", "0-15", "1,5,9", "all".
std::vector<int64_t> channelList(const std::string& spec, const std::function<int64_t()>& count)
{
    if (spec == "all") {
        std::vector<int64_t> all(static_cast<size_t>(count()));
        for (size_t c = 0; c < all.size(); ++c)
            all[c] = static_cast<int64_t>(c);
        return all;
    }
    std::vector<int64_t> channels;
    for (const auto& part : split(spec, ',')) {
        const size_t dash = part.find('-');
        if (dash == std::string::npos) {
            channels.push_back(wholeNumber("--channels", part));
            continue;
        }
        const int64_t first = wholeNumber("--channels", part.substr(0, dash));
        const int64_t last = wholeNumber("--channels", part.substr(dash + 1));
        if (last < first || last - first > 100000)
            throw UsageError("visualize: --channels: '" + part + "' is not a range FIRST-LAST with FIRST <= LAST");
        for (int64_t c = first; c <= last; ++c)
            channels.push_back(c);
    }
    if (channels.empty())
        throw UsageError("visualize: --channels: no channel in '" + spec + "'");
    return channels;
}

Objective objectiveFor(const CliOptions& o, int64_t channel)
{
    Objective objective;
    objective.channel = channel;
    objective.negative = o.negative;
    if (!o.probeFile.empty()) {
        objective.kind = ObjectiveKind::Probe;
        objective.probePath = o.probeFile;
    } else if (!o.direction.empty()) {
        objective.kind = ObjectiveKind::Direction;
        const c10::IValue saved = readTorchSaveFile(o.direction);
        if (!saved.isTensor() || saved.toTensor().dim() != 1)
            throw Error("--direction needs a file of one [channels] tensor (torch.save(vector, path)); '" + o.direction
                + "' holds " + (saved.isTensor() ? shapeToString(saved.toTensor().sizes().vec()) : saved.tagKind()));
        const at::Tensor vector = saved.toTensor().to(at::kDouble).contiguous();
        objective.direction.assign(vector.data_ptr<double>(), vector.data_ptr<double>() + vector.numel());
    } else if (!o.neuron.empty()) {
        objective.kind = ObjectiveKind::Neuron;
        if (o.neuron != "centre" && o.neuron != "center") {
            const auto parts = split(o.neuron, ',');
            if (parts.size() != 2)
                throw UsageError("visualize: --neuron: expected Y,X or centre, got '" + o.neuron + "'");
            objective.y = wholeNumber("--neuron", parts[0]);
            objective.x = wholeNumber("--neuron", parts[1]);
        }
    }
    return objective;
}

struct TopImage {
    SheetTile tile;
    std::string path;
};

// The given channels' top images in a folder, from a recording of the layer's channel means.
std::map<int64_t, std::vector<TopImage>> topImages(
    Engine& engine, const CliOptions& o, const ModelSetup& setup, const std::vector<int64_t>& channels)
{
    RecorderConfig config;
    config.grabs = {GrabSpec{o.layer}};
    config.topK = o.topK;
    Recorder recorder(config);
    RecordingSource source;
    const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    recordImageInputs(
        engine, recorder, {o.data}, setup, 16, threads,
        [](const Progress& p) {
            std::cerr << "\rtop images: " << p.done << " / " << p.total << std::flush;
            return !interrupted;
        },
        source);
    std::cerr << '\n';
    std::map<int64_t, std::vector<TopImage>> tiles;
    const auto top = recorder.topSamples();
    const auto found = top.find(o.layer);
    if (found == top.end())
        return tiles;
    for (int64_t channel : channels) {
        if (channel >= static_cast<int64_t>(found->second.size()) || tiles.count(channel))
            continue;
        for (const TopSample& sample : found->second[static_cast<size_t>(channel)]) {
            const std::string& path = source.imageFiles.at(static_cast<size_t>(sample.sample));
            const SheetTile tile{
                imageToTensor(decodeImage(path)), fs::path(path).filename().string() + " " + fixed(sample.value, 2)};
            tiles[channel].push_back({tile, fs::absolute(path).string()});
        }
    }
    return tiles;
}

std::string imageName(int64_t index, int64_t channel)
{
    return "image_" + std::to_string(index) + "_channel_" + std::to_string(channel) + ".png";
}

std::string htmlEscaped(const std::string& text)
{
    std::string out;
    for (char c : text)
        out += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : c == '"' ? "&quot;" : std::string(1, c);
    return out;
}

} // namespace

int runVisualize(const CliOptions& o)
{
    auto model = openModel(o);
    const ModelSetup setup = chooseSetup(*model, o);
    Engine engine(model);
    const bool probe = !o.probeFile.empty();
    const std::vector<int64_t> channels = channelList(o.channels, [&] {
        if (probe || !o.direction.empty())
            throw UsageError("visualize: --channels all is for channels, not a probe's classes or a direction");
        return channelCount(engine, setup.preprocessing, o.layer, o.size);
    });
    const fs::path out(o.out);
    const std::string extension = out.extension().string();
    const bool oneFile = extension == ".png" || extension == ".pt";
    const size_t imageCount = channels.size() * static_cast<size_t>(o.images);
    if (extension == ".png" && imageCount != 1)
        throw UsageError("visualize: " + std::to_string(imageCount)
            + " images do not fit in one PNG: give --out a folder (or FILE.pt)");

    VisualizeConfig base;
    base.layer = o.layer;
    base.steps = o.steps;
    base.size = o.size;
    base.parameterization = parseParameterization(o.param);
    base.learningRate = o.learningRate;
    base.diversity = o.diversity;
    base.transforms.enabled = !o.noTransforms;
    std::vector<Objective> objectives;
    for (int64_t channel : channels)
        for (int i = 0; i < o.images; ++i)
            objectives.push_back(objectiveFor(o, channel));

    std::signal(SIGINT, [](int) { interrupted = true; });
    const bool terminal = isatty(STDERR_FILENO) != 0;
    std::vector<at::Tensor> images;
    std::vector<double> values;
    std::vector<std::string> descriptions;
    bool cancelled = false;
    // With --images N, an objective's copies stay in one batch so the diversity term sees them.
    const size_t perBatch = std::max<size_t>(static_cast<size_t>(o.images),
        static_cast<size_t>(o.batch) / static_cast<size_t>(o.images) * static_cast<size_t>(o.images));
    for (size_t first = 0; first < objectives.size() && !cancelled; first += perBatch) {
        VisualizeConfig config = base;
        config.seed = o.seed + static_cast<int64_t>(first / perBatch);
        config.objectives.assign(objectives.begin() + static_cast<std::ptrdiff_t>(first),
            objectives.begin() + static_cast<std::ptrdiff_t>(std::min(objectives.size(), first + perBatch)));
        const VisualizeResult result = visualize(engine, setup.preprocessing, config, [&](const Progress& p) {
            // Every step on a terminal; a tenth of the run at a time into a log.
            if (!terminal && p.done % std::max<int64_t>(1, p.total / 10) != 0 && p.done != p.total)
                return !interrupted.load();
            std::cerr << (terminal ? "\r" : "") << "images " << first + 1 << "-" << first + config.objectives.size()
                      << " of " << objectives.size() << ": step " << p.done << " / " << p.total << "  objective "
                      << fixed(p.values.front(), 3) << "   " << (terminal ? "" : "\n") << std::flush;
            return !interrupted;
        });
        for (const auto& warning : result.warnings)
            std::cerr << (terminal ? "\n" : "") << "warning: " << warning << (terminal ? "" : "\n");
        images.push_back(result.images);
        values.insert(values.end(), result.objectives.begin(), result.objectives.end());
        descriptions.insert(descriptions.end(), result.descriptions.begin(), result.descriptions.end());
        cancelled = result.cancelled;
    }
    if (terminal)
        std::cerr << '\n';
    const at::Tensor all = at::cat(images);
    if (cancelled)
        std::cerr << "interrupted: writing the " << all.size(0) << " image(s) so far\n";

    if (extension == ".pt") {
        writePtDictionary(o.out, {{"images", all}, {"objectives", at::tensor(values, at::kDouble)}});
    } else if (oneFile) {
        writePng(o.out, all[0], 224);
    } else {
        fs::create_directories(out);
        // The optimised images first: an interrupted search for top images keeps them.
        for (int64_t i = 0; i < all.size(0); ++i)
            writePng((out / imageName(i, channels[static_cast<size_t>(i) / static_cast<size_t>(o.images)])).string(),
                all[i], 224);
        std::map<int64_t, std::vector<TopImage>> top;
        if (!o.data.empty() && !probe && o.direction.empty() && !cancelled)
            top = topImages(engine, o, setup, channels);
        std::vector<SheetRow> rows;
        nlohmann::json summary = {{"model", model->path()}, {"layer", o.layer}, {"steps", o.steps}, {"param", o.param},
            {"seed", o.seed}, {"cancelled", cancelled}, {"images", nlohmann::json::array()}};
        std::string html = "<!doctype html><meta charset=\"utf-8\"><title>" + htmlEscaped(o.layer)
            + "</title><style>body{font-family:sans-serif}td{text-align:center;font-size:12px}"
              "img{width:128px;height:128px;image-rendering:pixelated;object-fit:contain}</style>\n<h1>"
            + htmlEscaped(fs::path(model->path()).filename().string() + " · " + o.layer) + "</h1>\n<table>\n";
        for (int64_t i = 0; i < all.size(0); ++i) {
            const auto index = static_cast<size_t>(i);
            const int64_t channel = channels[index / static_cast<size_t>(o.images)];
            const std::string name = imageName(i, channel);
            SheetRow row{descriptions[index], {{all[i], "optimised " + fixed(values[index], 2)}}};
            html += "<tr><th>" + htmlEscaped(descriptions[index]) + "</th><td><img src=\"" + name + "\"><br>optimised "
                + fixed(values[index], 2) + "</td>";
            if (auto t = top.find(channel); t != top.end() && i % o.images == 0)
                for (const auto& image : t->second) {
                    row.tiles.push_back(image.tile);
                    html += "<td><img src=\"file://" + htmlEscaped(image.path) + "\"><br>"
                        + htmlEscaped(image.tile.caption) + "</td>";
                }
            html += "</tr>\n";
            rows.push_back(row);
            summary["images"].push_back(
                {{"file", name}, {"objective", descriptions[index]}, {"value", values[index]}, {"channel", channel}});
        }
        writeContactSheet((out / "sheet.png").string(), rows);
        writeFileAtomically((out / "index.html").string(),
            html + "</table>\n<p><img src=\"sheet.png\" style=\"width:auto;height:auto\"></p>\n");
        writeFileAtomically((out / "visualization.json").string(), summary.dump(1) + "\n");
    }
    std::signal(SIGINT, SIG_DFL);
    for (size_t i = 0; i < values.size(); ++i)
        std::cout << descriptions[i] << ": " << fixed(values[i], 4) << '\n';
    std::cout << "wrote " << o.out << '\n';
    return cancelled || interrupted ? 130 : 0;
}

} // namespace torchscope::cli
