// Engine benchmark: TorchScope's instrumented TorchScript against the plain TorchScript forward
// and against eager PyTorch with forward hooks (the Python libraries' way), measured side by
// side in one run, alternating case by case. Prints JSON.
//
//   torchscope-bench-engine MODEL_scripted.pt STATE_DICT.pt ARCH PYTHON WORKER.py
//                           [--batch 8] [--size 224] [--threads 2] [--repeats 15] [--device cpu|cuda]
#include "bench_timing.h"
#include "graph/engine.h"
#include "graph/instrumenter.h"
#include "model/model.h"
#include "python_worker.h"

#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>
#include <torch/cuda.h>
#include <torch/script.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <iostream>
#include <map>
#include <thread>

using namespace torchscope;

int main(int argc, char** argv)
{
    std::vector<std::string> args(argv + 1, argv + argc);
    const int batch = std::stoi(option(args, "--batch", "8"));
    const int size = std::stoi(option(args, "--size", "224"));
    const int threads = std::stoi(option(args, "--threads", "2"));
    const int repeats = std::stoi(option(args, "--repeats", "15"));
    const std::string device = option(args, "--device", "cpu");
    if (args.size() != 5) {
        std::cerr << "usage: torchscope-bench-engine MODEL.pt STATE_DICT.pt ARCH PYTHON WORKER.py "
                     "[--batch 8] [--size 224] [--threads 2] [--repeats 15] [--device cpu|cuda]\n";
        return 2;
    }
    const std::string modelPath = args[0], weights = args[1], arch = args[2], python = args[3], worker = args[4];
    const std::vector<std::string> blocks{"layer1", "layer2", "layer3", "layer4"};

    try {
        at::set_num_threads(threads);
        LoadOptions load;
        load.device = device;
        auto model = Model::load(modelPath, load);
        Engine engine(model);
        torch::manual_seed(0);
        const at::Device on(model->device());
        const at::Tensor input = torch::randn({batch, 3, size, size}).to(on);
        PythonWorker py({python, worker, arch, weights, std::to_string(batch), std::to_string(size),
            std::to_string(threads), device});
        // CUDA runs asynchronously: every measured call ends with its kernels.
        const auto synced = [&](std::function<void()> body) {
            return [body, cuda = on.is_cuda()] {
                body();
                if (cuda)
                    torch::cuda::synchronize();
            };
        };

        Request grab;
        for (const auto& b : blocks)
            grab.grabs.push_back(GrabSpec::parse(b));
        std::map<std::string, Request> truncations;
        for (const auto& b : blocks)
            truncations[b].truncateAt = b;

        torch::NoGradGuard noGrad;
        auto plain = synced([&] { model->module().forward({input}); });
        std::map<std::string, std::function<void()>> ours{
            {"plain", plain}, {"grab", synced([&] { engine.run(grab, {input}); })}};
        std::map<std::string, std::string> python{{"plain", "plain"}, {"grab", "hooks layer1,layer2,layer3,layer4"}};
        for (const auto& b : blocks) {
            ours["truncate " + b] = synced([&, b] { engine.run(truncations[b], {input}); });
            python["truncate " + b] = "truncate " + b;
        }

        // Warm up: the profiling executor optimises a graph on its second run.
        for (int i = 0; i < 2; ++i)
            for (auto& [name, run] : ours) {
                run();
                py.ask(python[name]);
            }
        // The cases rotate from repeat to repeat and the two sides take turns going first, so that
        // slow phases of a shared machine do not fall on one case or one side.
        std::vector<std::string> names;
        for (const auto& entry : ours)
            names.push_back(entry.first);
        std::map<std::string, std::vector<double>> oursTimes, pythonTimes;
        for (int r = 0; r < repeats; ++r) {
            std::rotate(names.begin(), names.begin() + 1, names.end());
            for (const auto& name : names) {
                auto measureOurs = [&] {
                    settle();
                    oursTimes[name].push_back(seconds(ours[name]));
                };
                auto measurePython = [&] {
                    settle();
                    pythonTimes[name].push_back(std::stod(py.ask(python[name])));
                };
                if (r % 2) {
                    measurePython();
                    measureOurs();
                } else {
                    measureOurs();
                    measurePython();
                }
            }
        }
        auto minimum = [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); };

        // Building a graph: from the request to a runnable function (the executor compiles it on
        // its first run, which the warm-up above measured as part of ordinary runs).
        std::vector<double> buildGrab, buildTruncate;
        for (int i = 0; i < 20; ++i) {
            const auto g = engine.resolve(grab);
            const auto t = engine.resolve(truncations["layer4"]);
            buildGrab.push_back(1e3 * seconds([&] { instrument(model->module(), g); }));
            buildTruncate.push_back(1e3 * seconds([&] { instrument(model->module(), t); }));
        }
        const auto shares = nlohmann::json::parse(py.ask("flops layer1,layer2,layer3,layer4"));

        const double full = median(oursTimes["plain"]);
        nlohmann::json truncation = nlohmann::json::array();
        for (const auto& b : blocks) {
            const double t = median(oursTimes["truncate " + b]);
            const double share = shares[b].get<double>();
            truncation.push_back({{"at", b}, {"seconds", t}, {"time_ratio_to_full", t / full}, {"flop_share", share},
                {"time_ratio_minus_flop_share", t / full - share},
                {"time_ratio_of_minimums", minimum(oursTimes["truncate " + b]) / minimum(oursTimes["plain"])},
                {"python_hook_seconds", median(pythonTimes["truncate " + b])},
                {"ours_over_python", t / median(pythonTimes["truncate " + b])}});
        }
        const nlohmann::json report{
            {"model", arch},
            {"batch", batch},
            {"size", size},
            {"threads", threads},
            {"device", model->device()},
            {"repeats", repeats},
            {"statistic", "median"},
            {"plain_forward_seconds", full},
            {"minimum_seconds",
                {{"plain", minimum(oursTimes["plain"])}, {"grab_4_blocks", minimum(oursTimes["grab"])},
                    {"python_eager", minimum(pythonTimes["plain"])}, {"python_hooks", minimum(pythonTimes["grab"])}}},
            {"grab_ratio_to_plain_of_minimums", minimum(oursTimes["grab"]) / minimum(oursTimes["plain"])},
            {"grab_4_blocks_seconds", median(oursTimes["grab"])},
            {"grab_ratio_to_plain", median(oursTimes["grab"]) / full},
            {"python_eager_seconds", median(pythonTimes["plain"])},
            {"python_hooks_4_blocks_seconds", median(pythonTimes["grab"])},
            {"grab_ours_over_python_hooks", median(oursTimes["grab"]) / median(pythonTimes["grab"])},
            {"plain_ours_over_python_eager", full / median(pythonTimes["plain"])},
            {"truncation", truncation},
            {"graph_build_ms", {{"grab_4_blocks", median(buildGrab)}, {"truncate_layer4", median(buildTruncate)}}},
        };
        std::cout << report.dump(2) << std::endl;
    } catch (const std::exception& e) {
        std::cerr << "torchscope-bench-engine: " << e.what() << '\n';
        return 1;
    }
    return 0;
}
