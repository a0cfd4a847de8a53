"""Audio underruns per utterance, from the player's running total.

What it is for: the player counts every time its device asked for samples and the queue was empty mid-utterance
(a gap heard as a click or a stutter) as one running total. The telemetry dock wants that per utterance, so this
attributes each increase of the total, as it is observed, to the utterance being played then.

What it must not do: import Qt or touch the player (it is handed the numbers).
"""

from __future__ import annotations

from collections import OrderedDict


class UnderrunsPerUtterance:
    """Turns observations (utterance number, player's total) into a count per utterance, the last `keep` kept."""

    def __init__(self, keep: int = 200) -> None:
        self.keep = keep
        self._last_total: int | None = None
        self._counts: OrderedDict[int, int] = OrderedDict()

    def observe(self, utterance: int, total: int) -> bool:
        """Record the player's total now, `utterance` being the one playing (0: none yet). True if it changed."""
        if self._last_total is None or total < self._last_total:  # first look, or the player was replaced
            self._last_total = total
            return False
        added, self._last_total = total - self._last_total, total
        if utterance <= 0:
            return False
        known = utterance in self._counts
        if added <= 0 and known:
            return False
        self._counts[utterance] = self._counts.get(utterance, 0) + added
        while len(self._counts) > self.keep:
            self._counts.popitem(last=False)
        return True

    def count(self, utterance: int) -> int:
        return self._counts.get(utterance, 0)

    def counts(self, utterances: list[int]) -> list[int]:
        return [self._counts.get(n, 0) for n in utterances]
