// torchscope-cli: inspect a TorchScript model's module tree, or run it while grabbing, editing
// and truncating ('torchscope-cli --help'). Errors go to stderr with exit code 1 (2 for usage errors).
#include "analysis/analysis_table.h"
#include "analysis_commands.h"
#include "attention_command.h"
#include "attribute_command.h"
#include "cli_options.h"
#include "commands.h"
#include "common/error.h"
#include "compare_command.h"
#include "each_image_command.h"
#include "evaluate_command.h"
#include "probe_command.h"
#include "record_command.h"
#include "sanity_command.h"
#include "setup_command.h"
#include "visualize_command.h"

#include <c10/util/Exception.h>

#include <iostream>

int main(int argc, char** argv)
{
    using namespace torchscope::cli;
    try {
        const CliOptions options = parseCommandLine(argc, argv);
        if (options.command == "help") {
            std::cout << options.helpText;
            return 0;
        }
        if (options.command == "analyses") {
            std::cout << (options.json ? torchscope::analysisTableJson() : torchscope::analysisTableMarkdown());
            return 0;
        }
        if (options.command == "inspect")
            return runInspect(options);
        if (options.command == "setup")
            return runSetup(options);
        if (options.command == "probe")
            return runProbe(options);
        if (options.command == "gradcam")
            return runGradCam(options);
        if (options.command == "patch")
            return runPatch(options);
        if (options.command == "attribute")
            return runAttribute(options);
        if (options.command == "attention")
            return runAttention(options);
        if (options.command == "evaluate")
            return runEvaluate(options);
        if (options.command == "sanity")
            return runSanity(options);
        if (options.command == "record")
            return runRecord(options);
        if (options.command == "compare")
            return runCompare(options);
        if (options.command == "visualize")
            return runVisualize(options);
        return options.eachImage ? runEachImage(options) : runModel(options);
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
