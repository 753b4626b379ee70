"""`python -m regbot` runs the command line."""

from regbot.bot.cli import main

raise SystemExit(main())
