"""regbot's exit codes (SPEC §1): 0 ran fine (even when regressions were found), 1 the gate
failed (``run`` only, when the config's gate says so), 2 bad input or configuration."""

EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_BAD_INPUT = 2
