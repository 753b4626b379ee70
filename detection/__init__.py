"""regbot.detection."""
