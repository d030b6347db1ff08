#include "sae_command.h"

#include "analysis_commands.h"

#include <CLI/CLI.hpp>

namespace torchscope::cli {

Command saeCommand()
{
    return {"sae",
        [](CLI::App& app, CliOptions& o) {
            CLI::App* sae
                = app.add_subcommand("sae", "sparse autoencoders on a layer's activations (sae train, sae evaluate)");
            sae->require_subcommand(1);
            CLI::App* train = sae->add_subcommand("train", "train TopK SAEs on layers, streamed over an image folder");
            CLI::App* evaluate
                = sae->add_subcommand("evaluate", "an SAE's reconstruction, sparsity and what splicing it in costs");
            CLI::App* latents = sae->add_subcommand(
                "latents", "what each latent sees: frequency, histogram, top images with maps, ablation effects");
            addModelOptions(train, o,
                "A TopK SAE (Gao et al. 2024) per --layer, all trained from one pass over --images: every\n"
                "position of a map [N, C, H, W] is one C-vector, a ViT's tokens one vector each. The vectors go\n"
                "through a shuffle buffer under --memory-mb; nothing but the SAEs is written (unless --cache). "
                "OUT/LAYER holds the\n"
                "SAE in SAELens's layout (sae_weights.safetensors, cfg.json), its checkpoint and training_log.csv;\n"
                "OUT/training.json what the run was asked and how far it came. Ctrl+C saves; --resume goes on.\n"
                "Progress: images, loss, FVU, L0 and the dead latents' share of the first layer.\n"
                "Under torchrun each rank streams its share of the images and trains its part of every step\n"
                "(--batch / ranks vectors), the gradients averaged over c10d; rank 0 writes the SAEs.\n");
            repeatable(train, "--layer", o.layers, "a module whose output the SAE reads (repeatable: one pass)")
                ->required();
            train->add_option("--images", o.imageFolder, "a folder of images (class sub-folders allowed)")
                ->required()
                ->check(CLI::ExistingDirectory);
            auto* expansion = train
                                  ->add_option("--expansion", o.expansion,
                                      "latents per input dimension, 1 to 1024; several (8,16,32): an SAE of each "
                                      "size per layer, all from the same pass")
                                  ->capture_default_str();
            train
                ->add_option("--latents", o.latents,
                    "the number of latents (instead of --expansion); several (4096,16384): an SAE of each")
                ->excludes(expansion);
            train->add_option("--k", o.saeK, "active latents per vector")
                ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))
                ->capture_default_str();
            train->add_option("--architecture", o.architecture, "topk, or batchtopk (k × batch over the batch)")
                ->check(CLI::IsMember({"topk", "batchtopk"}))
                ->capture_default_str();
            train->add_option("--matryoshka", o.matryoshka,
                "Matryoshka: these prefix widths of the latents (W1,W2,..., rising, below the latents) each\n"
                "reconstruct the input on their own too; their errors join the loss");
            train
                ->add_option(
                    "--b-dec-init", o.decoderBiasInit, "b_dec's start: the first batch's mean or geometric median")
                ->check(CLI::IsMember({"mean", "geometric-median"}))
                ->capture_default_str();
            train->add_option("--cache", o.vectorCache,
                "a folder for the layers' vectors as NumPy .npy shards (LAYER/vectors_NNNNN.npy, float32\n"
                "[n, d_in], and cache.json); a complete cache of the same run is read instead of the model");
            train->add_option("--epochs", o.epochs, "passes over the vectors; those after the first read --cache")
                ->check(CLI::Range(int64_t{1}, int64_t{1000}))
                ->capture_default_str();
            train
                ->add_option("--positions", o.positions,
                    "all, class (a ViT's class token), patches (its other tokens) or sample:N per image")
                ->capture_default_str();
            train->add_option("--tokens", o.tokens, "stop after this many vectors per SAE (default: one pass)")
                ->check(CLI::Range(int64_t{1}, int64_t{1} << 50));
            train->add_option("--batch", o.saeBatch, "vectors per training step")
                ->check(CLI::Range(int64_t{1}, int64_t{1} << 24))
                ->capture_default_str();
            train->add_option("--lr", o.saeLearningRate, "Adam's learning rate")
                ->check(CLI::Range(1e-9, 1.0))
                ->capture_default_str();
            train->add_option("--seed", o.seed, "the seed of the initialisation and the shuffling")
                ->capture_default_str();
            train->add_flag("--resume", o.resume, "go on from OUT's checkpoint (asked the same)");
            train->add_option("--out,-o", o.out, "a folder: one SAE folder per layer")->required();
            addDistributedTimeout(train, o);

            addModelOptions(evaluate, o,
                "FVU (Σ‖x − x̂‖² / Σ‖x − x̄‖²), explained variance, L0, dead and dense latents over --images, and\n"
                "the model's output with the reconstruction spliced in at the layer and with the layer\n"
                "zero-ablated: KL divergence from the clean output, top-1 agreement, cross-entropy (against the\n"
                "folder's class labels, else the clean predictions) and the loss recovered,\n"
                "(CE_zero - CE_spliced) / (CE_zero - CE_clean). FILE.json holds every figure and each latent's\n"
                "firing frequency, with the manifest beside.\n");
            evaluate->add_option("--sae", o.sae, "a saved SAE's folder (TorchScope's or SAELens's TopK layout)")
                ->required()
                ->check(CLI::ExistingDirectory);
            evaluate->add_option("--images", o.imageFolder, "a folder of images (class sub-folders give labels)")
                ->required()
                ->check(CLI::ExistingDirectory);
            repeatable(evaluate, "--layer", o.layers, "the module the SAE reads (default: the one its file names)")
                ->expected(1);
            evaluate->add_option("--max-images", o.maxImages, "at most this many of the folder's images")
                ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
            evaluate->add_option("--out,-o", o.out, "FILE.json")->required();
            addModelOptions(latents, o,
                "One pass over --images encodes the layer's vectors with the SAE and keeps, per latent, how often it\n"
                "fires, its mean and largest activation, a histogram of its activations (log10 bins, 1e-3 to 1e3)\n"
                "and its --top images with the position where it peaks and its map over the image's positions.\n"
                "Then, for the --effects most frequent latents (or --latents), its effect: the model run on its top\n"
                "images with the latent's part of the reconstruction removed; the clean prediction's probability\n"
                "before and after, each class's mean logit change, and the class whose logit falls most.\n");
            latents->add_option("--sae", o.sae, "a saved SAE's folder")->required()->check(CLI::ExistingDirectory);
            latents->add_option("--images", o.imageFolder, "a folder of images")
                ->required()
                ->check(CLI::ExistingDirectory);
            repeatable(latents, "--layer", o.layers, "the module the SAE reads (default: the one its file names)")
                ->expected(1);
            latents->add_option("--top", o.topK, "top images per latent")
                ->check(CLI::Range(1, 1000))
                ->capture_default_str();
            latents->add_option("--effects", o.effects, "the most frequent latents whose ablation is measured")
                ->check(CLI::Range(int64_t{0}, int64_t{1} << 24))
                ->capture_default_str();
            latents->add_option("--latents", o.latentList, "measure these latents' effects instead (1,5,9)");
            latents->add_option("--max-images", o.maxImages, "at most this many of the folder's images")
                ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
            latents->add_option("--out,-o", o.out, "FILE.json")->required();
            for (CLI::App* command : {train, evaluate, latents})
                command->add_option("--batch-images", o.batch, "images per forward pass")
                    ->check(CLI::Range(1, 4096))
                    ->capture_default_str();
            train
                ->add_option("--memory-mb", o.memoryMb,
                    "the most the shuffle buffers (64 batches each) may take, shared (default: a quarter of the memory "
                    "available)")
                ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
            return sae;
        },
        runSae};
}

} // namespace torchscope::cli
