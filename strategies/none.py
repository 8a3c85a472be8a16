"""none: send the full history every time; an overflow ends the run as `context_overflow`."""
from strategies.base import Strategy


class NoManagement(Strategy):
    name = "none"
    summary = "the full history every time; an overflow ends the run as context_overflow"
    source = "baseline (ours)"
