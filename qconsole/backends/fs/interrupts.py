"""ctrl+c and SIGTERM held back where a change must first record what a system call did.

A KeyboardInterrupt lands most often right after a system call returns: between a file made
and its place in a batch (a ``.new`` nobody knew of), a rename and its count (a published id
the audit line missed), or inside a thread pool's own machinery (a lock left held, a shutdown
that waits for good). These hold it across such steps and raise it after.
"""

from __future__ import annotations

import signal
import threading


class CtrlCHeld:
    """ctrl+c (SIGINT's KeyboardInterrupt) held back for a few system calls whose outcome must
    be recorded first, then raised. Only the main thread gets KeyboardInterrupt (elsewhere
    this does nothing); blocking the signal would not do, since a worker thread takes it."""

    __slots__ = ("prev", "got", "reraise", "prev_term", "got_term")

    def __init__(self, reraise: bool = True) -> None:
        #: False: a ctrl+c held is dropped at the end, for a clean-up that runs while an
        #: exception (the first ctrl+c, a failure) is on its way out anyway
        self.reraise = reraise

    def __enter__(self) -> CtrlCHeld:
        self.prev, self.got, self.prev_term, self.got_term = None, False, None, False
        if threading.current_thread() is threading.main_thread():
            if signal.getsignal(signal.SIGTERM) is _term_as_ctrl_c:  # (a publish's SIGTERM: ctrl+c too)
                self.prev_term = signal.signal(signal.SIGTERM, self._hold_term)
            self.prev = signal.signal(signal.SIGINT, self._hold)
        return self

    def _hold(self, _signum: int, _frame: object) -> None:
        self.got = True

    @property
    def came(self) -> bool:
        """A ctrl+c (or a SIGTERM taken as one) came while held: for a ``reraise=False`` hold
        whose owner raises it later, at a point of its choosing."""
        return self.got or self.got_term

    def _hold_term(self, _signum: int, _frame: object) -> None:
        self.got_term = True

    def __exit__(self, *_exc: object) -> None:
        if self.prev_term is not None:
            signal.signal(signal.SIGTERM, self.prev_term)
            if self.got_term and self.reraise:
                self.got = True  # raised as a held ctrl+c is, below
        if self.prev is None:
            return
        signal.signal(signal.SIGINT, self.prev)
        if self.got and self.reraise:
            if callable(self.prev):
                self.prev(signal.SIGINT, None)  # Python's own: raises KeyboardInterrupt
            if self.prev == signal.SIG_DFL or self.got_term:
                raise KeyboardInterrupt


class TermAsCtrlC:
    """SIGTERM (``kill``, ``timeout``, a service manager's stop) taken as ctrl+c while a publish
    runs: its default action killed the process with up to a batch of VSQS ``<id>.new`` files
    that nothing ever removes (``recover`` cannot tell them from a live vsqs publisher's) and no
    audit line for what was published. Only where SIGTERM has its default action, in the main
    thread; :class:`CtrlCHeld` holds it as it holds ctrl+c."""

    __slots__ = ("prev",)

    def __enter__(self) -> TermAsCtrlC:
        self.prev = None
        if threading.current_thread() is threading.main_thread() \
                and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
            self.prev = signal.signal(signal.SIGTERM, _term_as_ctrl_c)
        return self

    def __exit__(self, *_exc: object) -> None:
        if self.prev is not None:
            signal.signal(signal.SIGTERM, self.prev)


def _term_as_ctrl_c(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt  # (even where SIGINT is ignored, a background job's: SIGTERM still stops it)


__all__ = ["CtrlCHeld", "TermAsCtrlC"]
