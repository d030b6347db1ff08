// A cancel that reaches inside long work (common/cancel_scope.h): the innermost scope of the thread
// decides, a closed scope gives the thread back to the one around it, and the engine asks before
// every forward pass (and only inside a scope).
#include "test_support.h"

#include "common/cancel_scope.h"
#include "graph/engine.h"
#include "graph/request.h"
#include "model/model.h"

#include <gtest/gtest.h>
#include <torch/script.h>

#include <thread>

namespace torchscope::test {
namespace {

TEST(CancelScope, TheInnermostScopeDecidesAndAClosedOneGivesTheThreadBack)
{
    EXPECT_NO_THROW(CancelScope::check()) << "no scope: nothing to ask";
    bool stop = false;
    const CancelScope outer([&stop] { return stop; });
    EXPECT_NO_THROW(CancelScope::check());
    {
        const CancelScope inner([] { return true; });
        EXPECT_THROW(CancelScope::check(), Cancelled);
        // Another thread has no scope of its own: this one's does not reach it.
        bool threw = false;
        std::thread([&threw] {
            try {
                CancelScope::check();
            } catch (const Cancelled&) {
                threw = true;
            }
        }).join();
        EXPECT_FALSE(threw);
    }
    EXPECT_NO_THROW(CancelScope::check()) << "the outer scope applies again";
    stop = true;
    EXPECT_THROW(CancelScope::check(), Cancelled);
    {
        const CancelScope empty({});
        EXPECT_NO_THROW(CancelScope::check()) << "a scope without a check never cancels";
    }
}

TEST(CancelScope, TheEngineAsksBeforeEveryForwardPass)
{
    Engine engine(Model::load(fixture("color_cnn.pt")));
    const std::vector<c10::IValue> inputs{at::rand({2, 3, 40, 56})};
    const Request request;
    int asked = 0;
    bool stop = false;
    {
        const CancelScope scope([&] {
            ++asked;
            return stop;
        });
        EXPECT_NO_THROW(engine.run(request, inputs));
        EXPECT_NO_THROW(engine.run(request, inputs));
        EXPECT_EQ(asked, 2);
        stop = true;
        EXPECT_THROW(engine.run(request, inputs), Cancelled);
        EXPECT_EQ(asked, 3);
    }
    EXPECT_NO_THROW(engine.run(request, inputs)) << "outside the scope the run is not asked";
    EXPECT_EQ(asked, 3);
}

} // namespace
} // namespace torchscope::test
