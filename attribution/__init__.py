"""regbot.attribution."""
