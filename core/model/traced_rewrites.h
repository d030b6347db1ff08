#pragma once

// Mends what torch.jit.trace records wrongly about module boundaries. Includes Torch: for model.cpp
// only.

namespace torch::jit {
struct Module;
}

namespace torchscope {

// A Dropout in eval mode returns its input itself, so a trace credits every later read of that
// tensor to the dropout's output: a block that begins with one (timm's ConvNormAct, the qkv of
// EfficientViT) is recorded returning a tuple of its result and its input passed through, and its
// caller unpacks it. Eager hooks see the block return its result alone. Each method whose returned
// tuple holds such pass-throughs (directly, or passed up from a callee) returns the rest, and its
// callers read the input they gave it in their place. Only methods every caller unpacks are changed;
// everything else is left as traced. Returns how many methods were changed.
int returnWhatTracedBlocksReturn(torch::jit::Module& root);

} // namespace torchscope
