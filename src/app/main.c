/* main.c - startup: argv to the subcommand table of cli.c. */
#include "app/cli.h"

int main(int argc, char **argv) { return cli_main(argc, argv); }
