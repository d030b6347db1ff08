// torchscope-cli: inspect a TorchScript model's module tree, run it while grabbing, editing and
// truncating, and every analysis of the window ('torchscope-cli --help'). Each command defines its
// options next to its code (a Command); errors go to stderr with exit code 1 (2 for usage errors).
#include "analysis_commands.h"
#include "attention_command.h"
#include "attribute_command.h"
#include "cli_options.h"
#include "commands.h"
#include "common/error.h"
#include "common/heap_tuning.h"
#include "compare_command.h"
#include "concepts_command.h"
#include "crp_command.h"
#include "evaluate_command.h"
#include "probe_command.h"
#include "record_command.h"
#include "sae_command.h"
#include "sanity_command.h"
#include "setup_command.h"
#include "visualize_command.h"

#include <c10/util/Exception.h>

#include <iostream>

int main(int argc, char** argv)
{
    torchscope::tuneHeapForTensors(); // activations reuse freed memory instead of faulting in anew
    using namespace torchscope::cli;
    // In the order --help lists them.
    const std::vector<Command> commands{inspectCommand(), analysesCommand(), setupCommand(), runCommand(),
        gradCamCommand(), attributeCommand(), attentionCommand(), crpCommand(), evaluateCommand(), sanityCommand(),
        patchCommand(), recordCommand(), probeCommand(), saeCommand(), dissectCommand(), conceptsCommand(),
        compareCommand(), visualizeCommand()};
    try {
        const CliOptions options = parseCommandLine(argc, argv, commands);
        if (options.command == "help") {
            std::cout << options.helpText;
            return 0;
        }
        for (const auto& command : commands)
            if (command.name == options.command)
                return command.run(options);
        throw UsageError("no command '" + options.command + "'");
    } catch (const UsageError& e) {
        std::cerr << "torchscope-cli: " << e.what() << '\n';
        return 2;
    } catch (const torchscope::Error& e) {
        std::cerr << "torchscope-cli: error: " << e.what() << '\n';
    } catch (const c10::Error& e) {
        const std::string message = e.what_without_backtrace();
        std::cerr << "torchscope-cli: error: " << message.substr(0, message.find('\n')) << '\n';
    } catch (const std::exception& e) {
        std::cerr << "torchscope-cli: error: " << e.what() << '\n';
    }
    return 1;
}
