"""A running command's stdout and stderr as lines, read as they come (for --watch tests)."""

from __future__ import annotations

import subprocess
import threading
import time


class RunningLines:
    """``argv`` started with both streams read by threads into ``out`` and ``err``."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        self.out: list[str] = []
        self.err: list[str] = []
        for stream, sink in ((self.proc.stdout, self.out), (self.proc.stderr, self.err)):
            threading.Thread(target=lambda s=stream, k=sink: k.extend(iter(s.readline, "")), daemon=True).start()

    def wait_for(self, what, timeout: float = 30.0) -> None:
        """Until ``what()`` is true; AssertionError (with both streams) after ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while not what():
            if time.monotonic() > deadline or self.proc.poll() is not None and not what():
                time.sleep(0.2)  # the readers' last lines
                if what():
                    return
                raise AssertionError(f"exit {self.proc.poll()}\nstdout: {self.out[-5:]}\nstderr: {self.err[-5:]}")
            time.sleep(0.05)

    def stop(self, signal_number: int) -> int:
        self.proc.send_signal(signal_number)
        try:
            return self.proc.wait(30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
