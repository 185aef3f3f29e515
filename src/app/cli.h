/* cli.h - the `shortd` command line: one table of subcommands. */
#ifndef SHORTD_CLI_H
#define SHORTD_CLI_H

int cli_main(int argc, char **argv);

#endif
