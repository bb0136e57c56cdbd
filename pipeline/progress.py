"""Driver-side progress per phase: a rich bar on a terminal, log lines for cluster jobs."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

Mode = Literal["bar", "log", "none", "auto"]
HEARTBEAT_SECONDS = 60.0
"""In log mode, a phase whose tasks take long still prints a line this often."""


class PhaseProgress:
    """Callback target for finished tasks: counts tasks and documents."""

    def __init__(self, name: str, total: int, mode: Mode, console: Console,
                 log_every: float = 10.0) -> None:
        self.name, self.total, self.mode, self.console = name, total, mode, console
        self.done = 0
        self.docs = 0
        self.start = time.perf_counter()
        self.last_log = 0.0
        self.log_every = log_every
        self._bar: Progress | None = None
        self._task: Any = None

    def __call__(self, summary: dict[str, Any]) -> None:
        self.done += 1
        self.docs += int(summary.get("docs", 0))
        rate = self.docs / max(time.perf_counter() - self.start, 1e-9)
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, rate=f"{rate:,.0f} docs/s")
        elif self.mode == "log":
            now = time.perf_counter()
            if now - self.last_log >= self.log_every or self.done == self.total:
                self.log(f"{self.done}/{self.total} tasks, {self.docs:,} docs, "
                         f"{rate:,.0f} docs/s{self._eta()}")

    def log(self, message: str) -> None:
        """One plain line (no markup, no colour): what cluster job logs want."""
        self.last_log = time.perf_counter()
        elapsed = self.last_log - self.start
        self.console.print(f"[{self.name}] {message}, {elapsed:,.0f} s elapsed",
                           highlight=False, markup=False, soft_wrap=True)

    def _eta(self) -> str:
        if not self.done or self.done >= self.total:
            return ""
        left = (time.perf_counter() - self.start) / self.done * (self.total - self.done)
        return f", about {left:,.0f} s left"

    def heartbeat(self, stop: threading.Event, every: float) -> None:
        """While tasks run, a line at least every `every` seconds, even if none finishes."""
        while not stop.wait(min(every, 5.0)):
            if time.perf_counter() - self.last_log >= every:
                self.log(f"{self.done}/{self.total} tasks, {self.docs:,} docs, still running")


@contextmanager
def phase_progress(name: str, total: int, mode: Mode,
                   console: Console) -> Iterator[PhaseProgress]:
    if mode == "auto":
        mode = "bar" if sys.stderr.isatty() else "log"
    tracker = PhaseProgress(name, total, mode, console)
    if mode == "log":
        tracker.log(f"start: {total} tasks")
        stop = threading.Event()
        beat = threading.Thread(target=tracker.heartbeat, args=(stop, HEARTBEAT_SECONDS),
                                daemon=True)
        beat.start()
        try:
            yield tracker
        finally:
            stop.set()
            beat.join(timeout=10)
        return
    if mode != "bar":
        yield tracker
        return
    columns = (TextColumn("{task.description:<28}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TextColumn("ETA"),
               TimeRemainingColumn())
    with Progress(*columns, console=console, transient=False) as bar:
        tracker._bar = bar
        tracker._task = bar.add_task(name, total=total, rate="")
        yield tracker
