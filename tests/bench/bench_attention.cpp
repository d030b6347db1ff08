// Attention benchmark: TorchScope's PATH:attention grabs on every layer of a scripted ViT-B/16
// against its plain TorchScript forward (the goal: at most 1.3 times it) and against eager PyTorch
// asked for need_weights=True, average_attn_weights=False by hooks, measured side by side in one
// run, alternating case by case. Prints JSON.
//
//   torchscope-bench-attention VIT_scripted.pt PYTHON WORKER.py [--batch 8] [--threads 2] [--repeats 9]
#include "bench_timing.h"
#include "graph/engine.h"
#include "model/model.h"
#include "python_worker.h"

#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>
#include <torch/script.h>

#include <functional>
#include <iostream>
#include <map>

using namespace torchscope;

int main(int argc, char** argv)
{
    std::vector<std::string> args(argv + 1, argv + argc);
    const int batch = std::stoi(option(args, "--batch", "8"));
    const int threads = std::stoi(option(args, "--threads", "2"));
    const int repeats = std::stoi(option(args, "--repeats", "9"));
    if (args.size() != 3) {
        std::cerr << "usage: torchscope-bench-attention VIT.pt PYTHON WORKER.py [--batch 8] [--threads 2] "
                     "[--repeats 9]\n";
        return 2;
    }
    try {
        at::set_num_threads(threads);
        auto model = Model::load(args[0]);
        Engine engine(model);
        torch::manual_seed(0);
        const at::Tensor input = torch::randn({batch, 3, 224, 224});
        PythonWorker py({args[1], args[2], args[0], std::to_string(batch), std::to_string(threads)});

        Request grab;
        grab.grabs.push_back(GrabSpec::parse("encoder.layers.*.self_attention:attention"));
        torch::NoGradGuard noGrad;
        std::map<std::string, std::function<void()>> cases{
            {"plain", [&] { model->module().forward({input}); }},
            {"engine", [&] { engine.run(Request{}, {input}); }},
            {"attention",
                [&] {
                    const RunResult result = engine.run(grab, {input});
                    if (result.values.size() != 13)
                        throw std::runtime_error("expected 12 attention grabs");
                }},
            {"python plain", [&] { py.ask("plain"); }},
            {"python weights", [&] { py.ask("weights"); }},
        };
        // Python times itself (its answer), the rest is timed here; the cases rotate from repeat to
        // repeat so that slow phases of a shared machine do not fall on one case.
        std::map<std::string, std::vector<double>> times;
        std::vector<std::string> names;
        for (const auto& entry : cases)
            names.push_back(entry.first);
        for (int r = -1; r < repeats; ++r) { // -1: warm-up (the profiling executor optimises on run 2)
            std::rotate(names.begin(), names.begin() + 1, names.end());
            for (const auto& name : names) {
                double t = 0.0;
                if (name.rfind("python", 0) == 0)
                    t = std::stod(py.ask(name == "python plain" ? "plain" : "weights"));
                else
                    t = (settle(), seconds(cases[name]));
                if (r >= 0)
                    times[name].push_back(t);
            }
            if (r == -1) // a second warm-up run of ours
                for (const auto& name : {"plain", "engine", "attention"})
                    cases[name]();
        }
        const double plain = median(times["plain"]), attention = median(times["attention"]);
        const double pythonPlain = median(times["python plain"]), pythonWeights = median(times["python weights"]);
        const nlohmann::json report{
            {"model", "vit_b_16"},
            {"batch", batch},
            {"size", 224},
            {"threads", threads},
            {"repeats", repeats},
            {"statistic", "median"},
            {"layers", 12},
            {"plain_forward_seconds", plain},
            {"engine_without_grabs_seconds", median(times["engine"])},
            {"attention_12_layers_seconds", attention},
            {"attention_ratio_to_plain", attention / plain},
            {"goal_attention_ratio_to_plain", 1.3},
            {"python_eager_seconds", pythonPlain},
            {"python_need_weights_hooks_seconds", pythonWeights},
            {"python_need_weights_ratio_to_eager", pythonWeights / pythonPlain},
            {"attention_ours_over_python_need_weights", attention / pythonWeights},
        };
        std::cout << report.dump(2) << std::endl;
    } catch (const std::exception& e) {
        std::cerr << "torchscope-bench-attention: " << e.what() << '\n';
        return 1;
    }
    return 0;
}
