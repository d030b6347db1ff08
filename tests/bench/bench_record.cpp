// Recorder benchmark: images per second of a folder run with `stats` (decode on worker threads,
// statistics on the model's device) against the forward-only rate of the same model on
// pre-decoded batches, and peak memory for 100 and 1,000 images (each in a fresh process).
// Prints JSON.
//
//   torchscope-bench-record MODEL.pt SOURCE_IMAGES [--images 1000] [--batch 16] [--grab SPEC ...]
//   (internal) torchscope-bench-record MODEL.pt FOLDER --peak-memory-of N ...
#include "graph/engine.h"
#include "imaging/image_decoder.h"
#include "imaging/image_tensor.h"
#include "model/model.h"
#include "model/model_setup.h"
#include "record/folder_run.h"
#include "record/recorder.h"

#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>
#include <torch/script.h>

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <thread>

using namespace torchscope;
namespace fs = std::filesystem;

namespace {

int decodeThreads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); // as the CLI

struct Setup {
    std::shared_ptr<Model> model;
    Preprocessing preprocessing;
    RecorderConfig config;
    int batch = 16;
};

FolderRunResult runFolder(Setup& s, const ImageFolder& folder)
{
    Engine engine(s.model);
    Recorder recorder(s.config);
    FolderRunOptions options;
    options.batchSize = s.batch;
    options.decodeThreads = decodeThreads;
    return recordFolder(engine, recorder, folder, s.preprocessing, options);
}

double forwardOnlyRate(Setup& s, const ImageFolder& folder)
{
    // The same images, decoded beforehand: only the model runs while the clock does.
    std::vector<at::Tensor> batches;
    for (size_t i = 0; i < folder.images.size(); i += static_cast<size_t>(s.batch)) {
        std::vector<std::string> paths;
        for (size_t j = i; j < std::min(folder.images.size(), i + static_cast<size_t>(s.batch)); ++j)
            paths.push_back(folder.images[j].path);
        batches.push_back(loadImageBatch(paths, s.preprocessing));
    }
    Engine engine(s.model);
    torch::NoGradGuard noGrad;
    engine.run({}, forwardInputsFromBatch(*s.model, batches.front())); // warm-up
    const auto start = std::chrono::steady_clock::now();
    for (const auto& b : batches)
        engine.run({}, forwardInputsFromBatch(*s.model, b));
    return folder.images.size() / std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

long peakResidentKiB()
{
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_maxrss;
}

} // namespace

int main(int argc, char** argv)
{
    std::vector<std::string> args(argv + 1, argv + argc);
    if (args.size() < 2) {
        std::cerr
            << "usage: torchscope-bench-record MODEL.pt SOURCE_IMAGES [--images 1000] [--batch 16] [--grab SPEC ...]\n";
        return 2;
    }
    try {
        at::set_num_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
        Setup s;
        s.model = Model::load(args[0]);
        s.preprocessing = defaultSetup(*s.model).preprocessing;
        s.config.reduction = Reduction::Stats;
        int images = 1000;
        int64_t peakOf = -1;
        for (size_t i = 2; i + 1 < args.size(); i += 2) {
            if (args[i] == "--images")
                images = std::stoi(args[i + 1]);
            else if (args[i] == "--batch")
                s.batch = std::stoi(args[i + 1]);
            else if (args[i] == "--grab")
                s.config.grabs.push_back(GrabSpec::parse(args[i + 1]));
            else if (args[i] == "--decode-threads")
                decodeThreads = std::stoi(args[i + 1]);
            else if (args[i] == "--peak-memory-of")
                peakOf = std::stoll(args[i + 1]);
        }
        if (peakOf >= 0) { // child mode: run the first N images of FOLDER, print peak RSS
            ImageFolder folder = ImageFolder::scan(args[1]);
            folder.images.resize(std::min<size_t>(folder.images.size(), static_cast<size_t>(peakOf)));
            runFolder(s, folder);
            std::cout << peakResidentKiB() << std::endl;
            return 0;
        }

        // A folder of `images` distinct files, copied round-robin from the source.
        const fs::path dir = fs::temp_directory_path() / ("torchscope_bench_" + std::to_string(::getpid()));
        fs::create_directories(dir);
        std::vector<std::string> sources; // only what decodes (fixture folders hold a broken file on purpose)
        for (const auto& image : ImageFolder::scan(args[1]).images) {
            try {
                decodeImage(image.path);
                sources.push_back(image.path);
            } catch (const std::exception&) { }
        }
        if (sources.empty())
            throw std::runtime_error("no readable images in " + args[1]);
        for (int i = 0; i < images; ++i) {
            const fs::path from = sources[static_cast<size_t>(i) % sources.size()];
            fs::copy_file(from, dir / ("image_" + std::to_string(100000 + i) + from.extension().string()),
                fs::copy_options::overwrite_existing);
        }
        const ImageFolder folder = ImageFolder::scan(dir.string());

        const double forward = forwardOnlyRate(s, folder);
        const FolderRunResult run = runFolder(s, folder);
        auto peak = [&](int n) {
            std::string command = "'" + fs::read_symlink("/proc/self/exe").string() + "' '" + args[0] + "' '"
                + dir.string() + "' --batch " + std::to_string(s.batch) + " --peak-memory-of " + std::to_string(n);
            for (const auto& g : s.config.grabs)
                command += " --grab '" + g.selector + g.suffix() + "'";
            std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
            long kib = 0;
            if (!pipe || std::fscanf(pipe.get(), "%ld", &kib) != 1)
                throw std::runtime_error("the memory measurement run failed: " + command);
            return kib;
        };
        const long peak100 = peak(100), peak1000 = peak(std::min(images, 1000));
        fs::remove_all(dir);

        std::vector<std::string> grabs;
        for (const auto& g : s.config.grabs)
            grabs.push_back(g.selector + g.suffix());
        const nlohmann::json report{
            {"model", args[0]},
            {"images", images},
            {"batch", s.batch},
            {"threads", at::get_num_threads()},
            {"decode_threads", decodeThreads},
            {"grabs", grabs},
            {"reduction", "stats"},
            {"forward_only_images_per_second", forward},
            {"folder_run_images_per_second", run.imagesPerSecond},
            {"folder_run_over_forward_only", run.imagesPerSecond / forward},
            {"goal_folder_run_over_forward_only", 0.9},
            {"peak_rss_mib_100_images", peak100 / 1024.0},
            {"peak_rss_mib_1000_images", peak1000 / 1024.0},
            {"peak_rss_growth_100_to_1000", double(peak1000) / peak100 - 1.0},
            {"goal_peak_rss_growth", 0.05},
        };
        std::cout << report.dump(2) << std::endl;
    } catch (const std::exception& e) {
        std::cerr << "torchscope-bench-record: " << e.what() << '\n';
        return 1;
    }
    return 0;
}
