"""`python -m regbot.bot.cli`: the command line (the Action runs regbot this way)."""

from regbot.bot.cli.main import main

raise SystemExit(main())
