"""GitHub: the PyGithub adapter (``api``), the PR comment and job summary renderer
(``comment``), Markdown safety for text from commits and series (``markdown_safe``) and the
publishing of a run's comments and gate (``publish``)."""
