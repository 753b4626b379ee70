"""regbot.bot."""
