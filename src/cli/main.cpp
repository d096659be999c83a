// gpuclean: who holds the GPUs, why memory is not coming back, and a verified clean machine.
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/common.h"
#include "cli/who_command.h"

namespace {

int run(int argc, char** argv) {
  using namespace gpuclean::cli;
  CLI::App app{"gpuclean: find, explain and clean up whatever holds your GPUs", "gpuclean"};
  app.require_subcommand(0, 1);
  app.set_version_flag("--version", GPUCLEAN_VERSION);

  WhoOptions who;
  add_who_command(app, who);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "gpuclean: " << e.what() << "\n(run `gpuclean --help` for usage)\n";
    return kExitUsage;
  }

  const Io io{std::cout, std::cerr};
  if (app.got_subcommand("who")) return run_who(who, io);
  std::cerr << "gpuclean: status is not built yet; use `gpuclean who`\n";
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  // Exceptions are for bugs (DESIGN.md); one escaping still gets a message and exit 3, not an
  // abort with a core dump in someone's Slurm epilog.
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "gpuclean: internal error: " << e.what() << '\n';
  } catch (...) {
    std::cerr << "gpuclean: internal error\n";
  }
  return gpuclean::cli::kExitRuntime;
}
