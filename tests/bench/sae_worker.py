#!/usr/bin/env python3
"""The Python side of the SAE training benchmark, driven line by line by bench_sae: an eager
PyTorch loop of the same recipe as TorchScope's (sae/sparse_autoencoder.h: TopK, W_dec's rows
unit-norm with the gradient's parallel component removed, W_enc = W_decᵀ at the start, b_dec from the
first batch's mean, inputs scaled to √d_in, AuxK on dead latents, Adam with a warm-up), written the
way SAELens and Gao et al.'s reference write it: a dense decoder, codes @ W_dec.

    python3 sae_worker.py BATCHES.safetensors D_SAE K THREADS
Commands on stdin, one answer line each:
    train N   -> seconds for N steps of a fresh SAE over the file's batches (in order, cycling)
    quit
"""
import math
import sys
import time

import torch
from safetensors.torch import load_file


class EagerTopK:
    def __init__(self, d_in, d_sae, k, lr=4e-4, warmup=1000, dead_after=10_000_000, seed=0):
        g = torch.Generator().manual_seed(seed)
        decoder = torch.randn(d_sae, d_in, generator=g)
        decoder /= decoder.norm(dim=1, keepdim=True)
        self.W_dec = decoder.clone().requires_grad_(True)
        self.W_enc = decoder.t().contiguous().requires_grad_(True)
        self.b_enc = torch.zeros(d_sae, requires_grad=True)
        self.b_dec = torch.zeros(d_in, requires_grad=True)
        self.k, self.k_aux, self.lr, self.warmup, self.dead_after = k, max(1, d_in // 2), lr, warmup, dead_after
        self.optimiser = torch.optim.Adam([self.W_enc, self.W_dec, self.b_enc, self.b_dec], lr=lr)
        self.since_fired = torch.zeros(d_sae, dtype=torch.long)
        self.scale, self.steps = None, 0

    def step(self, x):
        if self.scale is None:
            self.scale = math.sqrt(x.shape[1]) / x.norm(dim=1).mean().item()
            with torch.no_grad():
                self.b_dec.copy_((x * self.scale).mean(0))
        xs = x * self.scale
        pre = (xs - self.b_dec) @ self.W_enc + self.b_enc
        values, indices = pre.topk(self.k, dim=-1)
        codes = torch.zeros_like(pre).scatter(-1, indices, values.relu())
        reconstruction = codes @ self.W_dec + self.b_dec
        residual = xs - reconstruction
        mse = residual.pow(2).sum(-1).mean()
        fired = torch.zeros_like(self.since_fired, dtype=torch.bool)
        fired[indices[values > 0]] = True
        self.since_fired += x.shape[0]
        self.since_fired[fired] = 0
        dead = self.since_fired >= self.dead_after
        loss = mse
        if dead.any():
            masked = pre.masked_fill(~dead, float("-inf"))
            aux_values, aux_indices = masked.topk(min(self.k_aux, int(dead.sum())), dim=-1)
            aux_codes = torch.zeros_like(pre).scatter(-1, aux_indices, aux_values.relu())
            aux = (aux_codes @ self.W_dec - residual.detach()).pow(2).sum(-1).mean()
            loss = loss + aux * min(1.0, int(dead.sum()) / self.k_aux) / 32
        self.optimiser.zero_grad()
        loss.backward()
        with torch.no_grad():
            g = self.W_dec.grad
            g -= (g * self.W_dec).sum(1, keepdim=True) * self.W_dec
            for group in self.optimiser.param_groups:
                group["lr"] = self.lr * min(1.0, (self.steps + 1) / self.warmup)
            self.optimiser.step()
            self.W_dec /= self.W_dec.norm(dim=1, keepdim=True).clamp_min(1e-12)
        self.steps += 1
        return loss.item()


def main():
    path, d_sae, k, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    torch.set_num_threads(threads)
    batches = load_file(path)
    batches = [batches[f"batch{i}"] for i in range(len(batches))]
    for line in sys.stdin:
        command, _, argument = line.strip().partition(" ")
        if command == "quit":
            break
        sae = EagerTopK(batches[0].shape[1], d_sae, k)
        start = time.perf_counter()
        for i in range(int(argument)):
            sae.step(batches[i % len(batches)])
        print(time.perf_counter() - start, flush=True)


if __name__ == "__main__":
    main()
