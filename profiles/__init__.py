"""regbot.profiles: reading profilers' output into the sample store and gCPU series."""
