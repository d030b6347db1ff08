#pragma once

// Decides whether a captured tensor needs a copy: may anything that runs after it is produced
// write to it in place? Follows the value through ops that return aliases of it (views, tuples,
// lists, if-branches, loops) and into the graphs of the modules and functions it is passed to.
// Conservative: an op it cannot see into counts as a writer.

#include <torch/csrc/jit/ir/ir.h>

#include <map>
#include <set>
#include <utility>

namespace torchscope {

class WriteAnalysis {
public:
    bool mayBeWritten(const torch::jit::Value* value) { return reach(value).written; }

private:
    struct Reach {
        bool written = false; // an in-place op (or an op we cannot see into) may write it
        bool escapes = false; // it may leave the graph as (part of) its result
        void merge(const Reach& other)
        {
            written = written || other.written;
            escapes = escapes || other.escapes;
        }
    };

    Reach reach(const torch::jit::Value* value);
    Reach reachOutputs(const torch::jit::Node* node);
    Reach calleeInput(const torch::jit::Function& callee, size_t input);

    std::map<std::pair<const torch::jit::Function*, size_t>, Reach> callees_;
    std::set<std::pair<const torch::jit::Function*, size_t>> calleesInProgress_;
    std::set<const torch::jit::Value*> visiting_;
};

} // namespace torchscope
