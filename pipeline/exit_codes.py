"""The exit codes of every `lemur-data` command: 0 success, 2 usage or manifest errors
(also a folder that is not a finished run, a launch refused by a failed check), 1 a run,
push or training that failed, 130 stopped by Ctrl-C."""

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED = 130  # the shell's code for Ctrl-C
