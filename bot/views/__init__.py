"""Terminal views: tables of a run or a detection, and the `regbot explain` screen. Views take
plain data and a console; they never import a command."""
