"""One line of `cosydesk doctor`: the Check record and its three statuses, shared by every probe.

Plain data only (no probes, no imports beyond the standard library), so the doctor's modules can share it
without importing each other.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

OK, WARN, FAIL = "OK", "WARN", "FAIL"


@dataclass
class Check:
    """One diagnostic line: what was checked, how it went, what was found and the command that fixes it."""

    name: str
    status: str  # OK | WARN | FAIL
    detail: str
    fix: str = ""  # one command (or, where no command exists, one action); empty when status is OK

    def as_dict(self) -> dict[str, str]:
        return asdict(self)

    def line(self) -> str:
        text = f"[{self.status:<4}] {self.name}: {self.detail}"
        if self.fix:
            text += f"\n       fix: {self.fix}"
        return text
