"""regbot: catches tiny performance regressions after each deploy and names the commits behind them."""

__version__ = "0.1.0"
