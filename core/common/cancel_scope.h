#pragma once

// A cancel that reaches inside long work (in the manner of Python's KeyboardInterrupt): an
// operation opens a CancelScope with its job's "was a cancel asked for?" check, and every forward
// pass run on this thread inside it (graph/engine.h) first asks that check, throwing Cancelled
// when it says yes. So one image's occlusion or Integrated Gradients, thousands of forwards in
// batches, stops at its next batch instead of at the end of the image. Cancelled never leaves the
// operation that opened the scope: it catches it and returns what it finished, marked cancelled.
// Thread-local: a scope on one lane's thread does not touch another's.

#include <functional>
#include <stdexcept>

namespace torchscope {

class Cancelled : public std::runtime_error {
public:
    Cancelled()
        : std::runtime_error("cancelled")
    { }
};

class CancelScope {
public:
    // `cancelled` may be empty (nothing to ask: the scope never throws).
    explicit CancelScope(std::function<bool()> cancelled);
    ~CancelScope(); // the enclosing scope, if any, applies again
    CancelScope(const CancelScope&) = delete;
    CancelScope& operator=(const CancelScope&) = delete;

    // Throws Cancelled when the innermost scope on this thread was asked to stop.
    static void check();

private:
    std::function<bool()> cancelled_;
    CancelScope* outer_;
};

} // namespace torchscope
