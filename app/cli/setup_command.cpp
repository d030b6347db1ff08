#include "setup_command.h"

#include "graph/setup_advice.h"
#include "model/model.h"
#include "open_model.h"

#include <CLI/CLI.hpp>
#include <iostream>

namespace torchscope::cli {

static int runSetup(const CliOptions& options)
{
    auto model = openModel(options);
    const ModelSetup setup = chooseSetup(*model, options);
    const bool stored = storedSetup(*model).has_value();
    std::cout << model->path() << ": " << model->forwardSignature() << "\n\n";
    std::cout << "setup ("
              << (options.preprocess || options.labels || options.scores ? "as given"
                         : stored                                        ? "the model's torchscope.json"
                                                                         : "none stored: ImageNet's default")
              << "): " << setup.describe() << '\n';
    const SetupAdvice advice = adviseSetup(*model, setup);
    std::cout << "\nwhat the model says:\n";
    for (const auto& note : advice.notes)
        std::cout << "  " << note << '\n';
    if (!options.out.empty()) {
        writeModelWithSetup(model->path(), options.out, setup);
        std::cout << "\nwrote " << options.out << " with this setup as its torchscope.json:\n"
                  << setup.toJson() << '\n';
    } else if (!stored) {
        std::cout << "\nstore a setup in a copy of the model with: torchscope-cli setup " << model->path()
                  << " --preprocess SETUP.json [--labels LABELS.txt] --out COPY.pt\n";
    }
    return 0;
}

// torchscope-cli setup.
Command setupCommand()
{
    return {"setup",
        [](CLI::App& app, CliOptions& o) {
            CLI::App* setup
                = app.add_subcommand("setup", "print the input setup and what the model says about its input");
            addModelOptions(setup, o,
                "What the model says: the first convolution's channels, the last layer's outputs, "
                "input sizes that run.\n--out writes a copy of the model with the setup stored in it.\n");
            setup->add_option("--out,-o", o.out, "COPY.pt: the model with the setup as its torchscope.json");
            return setup;
        },
        runSetup};
}

} // namespace torchscope::cli
