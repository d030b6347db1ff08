// SAE training benchmark: vectors per second of TorchScope's TopK SAE (sae/sparse_autoencoder: a
// sparse decoder over the k active rows) against an eager PyTorch loop of the same recipe with a
// dense decoder (sae_worker.py), on the same batches: activation-like vectors (the sum of k of a
// planted dictionary's directions, non-negative coefficients, plus an offset) written once to a
// safetensors file both read. Alternating runs of a fresh SAE each, medians. Prints JSON.
//
//   torchscope-bench-sae PYTHON WORKER.py [--d-in 256] [--expansion 16] [--k 32] [--batch 4096]
//                        [--steps 8] [--rounds 3] [--dir DIR]
#include "bench_timing.h"
#include "export/array_files.h"
#include "export/read_tensors.h"
#include "python_worker.h"
#include "sae/sparse_autoencoder.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <iostream>
#include <thread>

using namespace torchscope;

int run(std::vector<std::string> args)
{
    const int64_t dIn = std::stoll(option(args, "--d-in", "256"));
    const int64_t expansion = std::stoll(option(args, "--expansion", "16"));
    const int64_t k = std::stoll(option(args, "--k", "32"));
    const int64_t batch = std::stoll(option(args, "--batch", "4096"));
    const int steps = std::stoi(option(args, "--steps", "8"));
    const int rounds = std::stoi(option(args, "--rounds", "3"));
    const std::string dir = option(args, "--dir", std::filesystem::temp_directory_path().string());
    if (args.size() != 2) {
        std::cerr << "usage: torchscope-bench-sae PYTHON WORKER.py [--d-in 256] [--expansion 16] [--k 32] "
                     "[--batch 4096] [--steps 8] [--rounds 3] [--dir DIR]\n";
        return 2;
    }
    const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    at::set_num_threads(threads);
    const int64_t dSae = expansion * dIn;

    // The batches: each vector k/4 of 4 · d_in planted directions with coefficients in [0, 2), plus an offset.
    at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(7);
    at::Tensor dictionary = at::randn({4 * dIn, dIn}, generator, at::kFloat);
    dictionary = dictionary / dictionary.norm(2, {1}, true);
    const at::Tensor offset = at::randn({dIn}, generator, at::kFloat);
    NamedTensors batches;
    const int64_t active = std::max<int64_t>(1, k / 4);
    for (int i = 0; i < steps; ++i) {
        const at::Tensor chosen
            = at::randint(4 * dIn, {batch, active}, generator, at::TensorOptions().dtype(at::kLong));
        const at::Tensor weights = at::rand({batch, active}, generator, at::kFloat) * 2.0;
        const at::Tensor codes = at::zeros({batch, 4 * dIn}).scatter_add_(1, chosen, weights);
        batches.emplace_back("batch" + std::to_string(i), (codes.matmul(dictionary) + offset).contiguous());
    }
    const std::string path = (std::filesystem::path(dir) / "torchscope_bench_sae_batches.safetensors").string();
    writeSafetensors(path, batches);
    const auto read = readNamedTensors(path);
    std::vector<at::Tensor> inputs;
    for (int i = 0; i < steps; ++i)
        inputs.push_back(read.at("batch" + std::to_string(i)));
    PythonWorker python({args[0], args[1], path, std::to_string(dSae), std::to_string(k), std::to_string(threads)});

    SaeConfig config;
    config.dIn = dIn;
    config.dSae = dSae;
    config.k = k;
    double lastFvu = 0.0;
    const auto ours = [&] {
        SparseAutoencoder sae(config);
        for (const auto& x : inputs)
            lastFvu = sae.trainStep(x).fvu;
    };
    ours(); // warm-up: pages touched, kernels chosen
    python.ask("train " + std::to_string(steps));
    std::vector<double> oursSeconds, eagerSeconds;
    for (int r = 0; r < rounds; ++r) {
        settle();
        oursSeconds.push_back(seconds(ours));
        settle();
        eagerSeconds.push_back(std::stod(python.ask("train " + std::to_string(steps))));
    }
    std::filesystem::remove(path);
    const double vectors = static_cast<double>(steps * batch);
    const double oursRate = vectors / median(oursSeconds), eagerRate = vectors / median(eagerSeconds);
    const nlohmann::json report = {{"d_in", dIn}, {"d_sae", dSae}, {"k", k}, {"batch", batch}, {"steps", steps},
        {"rounds", rounds}, {"threads", threads}, {"torchscope_vectors_per_second", oursRate},
        {"eager_vectors_per_second", eagerRate}, {"ratio_to_eager", oursRate / eagerRate}, {"last_step_fvu", lastFvu}};
    std::cout << report.dump(1) << std::endl;
    return 0;
}

int main(int argc, char** argv)
{
    try {
        return run(std::vector<std::string>(argv + 1, argv + argc));
    } catch (const std::exception& e) {
        std::cerr << "torchscope-bench-sae: " << e.what() << '\n';
        return 1;
    }
}
