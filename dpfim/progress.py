"""Progress on stderr, in the two kinds docs/cli.md ("Streams") describes.

PUBLIC (a terminal without -v): what is drawn is decided by public parameters alone. Reading a
file of known size draws the whole percent read, every value 0, 1, ..., 100 exactly once and in
order (a read that jumps from 3 % to 57 % draws 4..57 in turn), then blanks the line; no rate,
elapsed time, ETA, byte total or count. So the bytes written are the same for every input: a
file and the same file plus one record give identical stderr (only their timing differs, and
the run time is outside the guarantee, docs/privacy.md §1). An input of unknown size (stdin, a
pipe) gets one line without numbers. Counting draws nothing: its phases, floors and passes
depend on the data.

EXACT (-v, curator-only): tqdm bars with the exact figures (bytes, records, floors, passes).
"""

from __future__ import annotations

from typing import Final, TextIO

OFF: Final = "off"
PUBLIC: Final = "public"
EXACT: Final = "exact"

Setting = bool | str  # True is PUBLIC: a caller must ask for the exact figures by name


def progress_mode(setting: Setting | None) -> str:
    """OFF, PUBLIC or EXACT from a progress setting (False/None: OFF, True: PUBLIC)."""
    if setting is None or setting is False:
        return OFF
    if setting is True:
        return PUBLIC
    if setting in (OFF, PUBLIC, EXACT):
        return str(setting)
    raise ValueError(f"progress must be a bool, {OFF!r}, {PUBLIC!r} or {EXACT!r}; got {setting!r}")


class PercentBar:
    """Whole percents 0..100, each drawn exactly once, in order, on one line that is blanked at
    the end: the bytes written do not depend on how far or in what steps the input was read."""

    WIDTH: Final = 20

    def __init__(self, label: str, file: TextIO) -> None:
        self._label, self._file = label, file
        self._shown = -1
        self._width = 0
        self.to(0)

    def to(self, percent: int) -> None:
        """Draw every whole percent past the last one drawn, up to `percent` (at most 100)."""
        if percent <= self._shown:
            return
        for p in range(self._shown + 1, min(100, percent) + 1):
            fill = p * self.WIDTH // 100
            frame = f"{self._label} {p:3d}% |{'#' * fill}{' ' * (self.WIDTH - fill)}|"
            self._width = len(frame)
            self._file.write("\r" + frame)
            self._shown = p
        self._file.flush()

    def close(self, *, complete: bool = True) -> None:
        """Draw up to 100 (`complete`: the input was read to its end) and blank the line."""
        if complete:
            self.to(100)
        self._file.write("\r" + " " * self._width + "\r")
        self._file.flush()


class PhaseLine:
    """One line naming a phase, without numbers, blanked at the end (an input of unknown size)."""

    def __init__(self, label: str, file: TextIO) -> None:
        self._file = file
        self._frame = f"{label} ..."
        file.write("\r" + self._frame)
        file.flush()

    def to(self, percent: int) -> None:
        """Nothing to draw: the size is unknown."""

    def close(self, *, complete: bool = True) -> None:
        self._file.write("\r" + " " * len(self._frame) + "\r")
        self._file.flush()
