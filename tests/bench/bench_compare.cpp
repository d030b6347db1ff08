// CKA benchmark: the cost of a streamed linear-CKA comparison of two models (every pair of the
// chosen layers) against the two models' forward passes alone on the same batches, measured in one
// process in alternating chunks; and peak memory for 100 and 1,000 images (each in a fresh
// process), which must stay flat: only one batch of activations per layer is ever held.
// Prints JSON.
//
//   torchscope-bench-compare A.pt B.pt [--images 1000] [--batch 32] [--size 224] [--layer SPEC ...]
//   (internal) torchscope-bench-compare A.pt B.pt --peak-memory-of N ...
#include "compare/compare_run.h"
#include "graph/engine.h"
#include "model/model.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>
#include <nlohmann/json.hpp>

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <thread>

using namespace torchscope;

namespace {

struct Options {
    std::string a, b;
    int images = 1000;
    int batch = 32;
    int size = 224;
    std::vector<std::string> layers;
    int64_t peakOf = -1;
};

// Four distinct random batches, cycled: the models' cost does not depend on the values.
std::vector<at::Tensor> batchPool(const Options& o)
{
    at::manual_seed(0);
    std::vector<at::Tensor> pool;
    for (int i = 0; i < 4; ++i)
        pool.push_back(at::randn({o.batch, 3, o.size, o.size}));
    return pool;
}

BatchStream streamOf(const std::vector<at::Tensor>& pool, int images, int batch)
{
    auto done = std::make_shared<int>(0);
    BatchStream stream;
    stream.total = images;
    stream.next = [&pool, done, images, batch]() -> std::optional<ImageBatch> {
        if (*done >= images)
            return std::nullopt;
        ImageBatch b;
        const int n = std::min(batch, images - *done);
        b.images = pool[static_cast<size_t>(*done / batch) % pool.size()].slice(0, 0, n);
        for (int i = 0; i < n; ++i)
            b.indices.push_back(*done + i);
        *done += n;
        return b;
    };
    return stream;
}

double seconds(const std::function<void()>& work)
{
    const auto start = std::chrono::steady_clock::now();
    work();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

long peakResidentKiB()
{
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_maxrss;
}

Options parse(const std::vector<std::string>& args)
{
    if (args.size() < 2)
        throw std::runtime_error("usage: torchscope-bench-compare A.pt B.pt [--images 1000] [--batch 32] [--size 224] "
                                 "[--layer SPEC ...]");
    Options o;
    o.a = args[0];
    o.b = args[1];
    for (size_t i = 2; i + 1 < args.size(); i += 2) {
        if (args[i] == "--images")
            o.images = std::stoi(args[i + 1]);
        else if (args[i] == "--batch")
            o.batch = std::stoi(args[i + 1]);
        else if (args[i] == "--size")
            o.size = std::stoi(args[i + 1]);
        else if (args[i] == "--layer")
            o.layers.push_back(args[i + 1]);
        else if (args[i] == "--peak-memory-of")
            o.peakOf = std::stoll(args[i + 1]);
        else
            throw std::runtime_error("unknown option " + args[i]);
    }
    if (o.layers.empty())
        o.layers = {"conv1", "layer1.0", "layer1", "layer2", "layer3.0", "layer3", "layer4", "fc"};
    return o;
}

} // namespace

int main(int argc, char** argv)
{
    try {
        const Options o = parse({argv + 1, argv + argc});
        at::set_num_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
        const auto a = Model::load(o.a);
        const auto b = Model::load(o.b);
        const auto pool = batchPool(o);
        CompareConfig config;
        config.layers = o.layers;
        if (o.peakOf >= 0) { // child mode: compare the first N images, print peak RSS
            compareModels(a, b, config, streamOf(pool, static_cast<int>(o.peakOf), o.batch));
            std::cout << peakResidentKiB() << std::endl;
            return 0;
        }

        const at::NoGradGuard noGrad;
        auto forwardBoth = [&](int images) {
            // Fresh engines, as compareModels makes: both paths pay TorchScript's warm-up runs.
            Engine engineA(a), engineB(b);
            const BatchStream stream = streamOf(pool, images, o.batch);
            while (auto batch = stream.next()) {
                engineA.run({}, forwardInputsFromBatch(*a, batch->images));
                engineB.run({}, forwardInputsFromBatch(*b, batch->images));
            }
        };
        forwardBoth(o.batch); // warm-up, both paths
        CompareResult result = compareModels(a, b, config, streamOf(pool, o.batch * 4, o.batch));

        // Alternating chunks of about an eighth of the images (whole batches), so that neither path
        // gets the machine's quieter minutes.
        const int chunk = std::max(o.batch, (o.images / 8 / o.batch) * o.batch);
        double forwardSeconds = 0, compareSeconds = 0;
        for (int done = 0; done < o.images; done += chunk) {
            const int n = std::min(chunk, o.images - done);
            forwardSeconds += seconds([&] { forwardBoth(n); });
            compareSeconds += seconds([&] { result = compareModels(a, b, config, streamOf(pool, n, o.batch)); });
        }

        auto peak = [&](int n) {
            std::string command = "'" + std::filesystem::read_symlink("/proc/self/exe").string() + "' '" + o.a + "' '"
                + o.b + "' --batch " + std::to_string(o.batch) + " --size " + std::to_string(o.size)
                + " --peak-memory-of " + std::to_string(n);
            for (const auto& layer : o.layers)
                command += " --layer '" + layer + "'";
            std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
            long kib = 0;
            if (!pipe || std::fscanf(pipe.get(), "%ld", &kib) != 1)
                throw std::runtime_error("the memory measurement run failed: " + command);
            return kib;
        };
        const long peak100 = peak(std::min(o.images, 100)), peak1000 = peak(o.images);

        const nlohmann::json report{
            {"model_a", o.a},
            {"model_b", o.b},
            {"images", o.images},
            {"batch", o.batch},
            {"size", o.size},
            {"threads", at::get_num_threads()},
            {"layers_a", result.layersA},
            {"layer_pairs", result.layersA.size() * result.layersB.size()},
            {"two_forward_passes_seconds", forwardSeconds},
            {"cka_seconds", compareSeconds},
            {"cka_over_two_forward_passes", compareSeconds / forwardSeconds},
            {"goal_cka_over_two_forward_passes", 1.2},
            {"peak_rss_mib_100_images", peak100 / 1024.0},
            {"peak_rss_mib_all_images", peak1000 / 1024.0},
            {"peak_rss_growth", double(peak1000) / peak100 - 1.0},
        };
        std::cout << report.dump(2) << std::endl;
    } catch (const std::exception& e) {
        std::cerr << "torchscope-bench-compare: " << e.what() << '\n';
        return 1;
    }
    return 0;
}
