"""The `council` command's exit codes, one name each.

0: the command did its work (an advisory was given, whatever its verdict; a dry run).
1: the command ran and what it checked or sent is not fine (problems in a config file, a
   failing model check, a replay the server rejected).
2: a usage error, a configuration or input that cannot be read, or nothing to review.
3: the council could not convene (NO_QUORUM): fewer than 2 seats gave a valid answer.
130: stopped (Ctrl-C or SIGTERM) before it finished, as a shell reports an interrupt.
"""

EXIT_OK = 0
EXIT_PROBLEMS = 1
EXIT_USAGE = 2
EXIT_NO_QUORUM = 3
EXIT_INTERRUPTED = 130
