// trainlab, the front binary: the command line (cli.h) over the torch-free runner. Training runs in
// trainlab-train, which the runner starts as a child.
#include "harness/cli/cli.h"

int main(int argc, char** argv) { return trainlab::run_cli(argc, argv); }
