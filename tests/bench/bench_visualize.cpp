// Feature-visualisation benchmark: steps per second of TorchScope's activation maximisation
// (core/visualize) against the eager Python reference loop doing the same steps on the same
// weights (visualize_worker.py), the whole forward (Lucent's way) and cut at the layer
// (TruncatedModule's way). Alternating chunks in one process each, medians. Prints JSON.
//
//   torchscope-bench-visualize MODEL.pt demo|resnet18 LAYER SIZE PYTHON WORKER.py [--steps 32] [--rounds 5]
#include "graph/engine.h"
#include "model/model.h"
#include "model/model_setup.h"
#include "python_worker.h"
#include "visualize/activation_maximization.h"

#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <thread>

using namespace torchscope;

namespace {

double median(std::vector<double> values)
{
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

} // namespace

int run(int argc, char** argv)
{
    if (argc < 7) {
        std::cerr << "usage: torchscope-bench-visualize MODEL.pt demo|resnet18 LAYER SIZE PYTHON WORKER.py "
                     "[--steps 32] [--rounds 5]\n";
        return 2;
    }
    const std::string modelPath = argv[1], arch = argv[2], layer = argv[3], interpreter = argv[5], script = argv[6];
    const int size = std::stoi(argv[4]);
    int steps = 32, rounds = 5;
    for (int i = 7; i + 1 < argc; i += 2) {
        if (std::string(argv[i]) == "--steps")
            steps = std::stoi(argv[i + 1]);
        else if (std::string(argv[i]) == "--rounds")
            rounds = std::stoi(argv[i + 1]);
    }
    const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    at::set_num_threads(threads);
    LoadOptions options;
    options.device = "cpu";
    const auto model = Model::load(modelPath, options);
    Engine engine(model);
    const Preprocessing preprocessing = defaultSetup(*model).preprocessing;
    VisualizeConfig config;
    config.layer = layer;
    config.size = size;
    config.steps = steps;
    config.objectives = {Objective{ObjectiveKind::Channel, 0}};
    PythonWorker python({interpreter, script, arch, modelPath, layer, std::to_string(size), std::to_string(threads)});

    visualize(engine, preprocessing, config); // warm-up: graphs built and optimised, pages touched
    python.ask("whole " + std::to_string(steps));
    python.ask("cut " + std::to_string(steps));
    std::vector<double> ours, whole, cut;
    for (int r = 0; r < rounds; ++r) {
        const auto start = std::chrono::steady_clock::now();
        visualize(engine, preprocessing, config);
        ours.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        whole.push_back(std::stod(python.ask("whole " + std::to_string(steps))));
        cut.push_back(std::stod(python.ask("cut " + std::to_string(steps))));
    }
    const double oursRate = steps / median(ours), wholeRate = steps / median(whole), cutRate = steps / median(cut);
    const nlohmann::json report = {{"model", arch}, {"layer", layer}, {"size", size}, {"steps_per_run", steps},
        {"rounds", rounds}, {"threads", threads}, {"torchscope_steps_per_second", oursRate},
        {"python_whole_forward_steps_per_second", wholeRate}, {"python_cut_at_layer_steps_per_second", cutRate},
        {"ratio_to_python_whole_forward", oursRate / wholeRate}, {"ratio_to_python_cut_at_layer", oursRate / cutRate}};
    std::cout << report.dump(1) << std::endl;
    return 0;
}

int main(int argc, char** argv)
{
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        std::cerr << "torchscope-bench-visualize: " << e.what() << '\n';
        return 1;
    }
}
