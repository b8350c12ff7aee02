"""Headless TUI benchmark on a 100k-message VSQS queue.

    .venv/bin/python benchmarks/bench_tui.py [--messages 100000]

Prints the time to first paint of the queue screen (screen up, and list filled) and the
CPU time per 1 s refresh tick (countdowns redrawn from the clock, no rescan), with targets.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from qconsole.backends import open_target as Root  # noqa: E402

TARGET_PAINT_S = 0.5
TARGET_TICK_S = 0.1


def rss_mb() -> float:
    """Resident memory of this process now (Linux /proc; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6
    except OSError:
        return 0.0


def build(base: str, n: int) -> str:
    """``n`` ready messages plus 1% in flight, µs ids as vsqs 0.3 writes them."""
    q = os.path.join(base, "big")
    os.makedirs(q)
    now = time.time()
    start = int((now - 3600) * 1_000_000)
    held = n // 100
    for i in range(n):
        mid = start + i * 1000
        name = f"{mid}.{int((now + 5 + i % 300) * 1_000_000)}" if i < held else str(mid)
        fd = os.open(os.path.join(q, name), os.O_CREAT | os.O_WRONLY, 0o644)
        os.write(fd, b"{}")
        os.close(fd)
    os.makedirs(os.path.join(base, "small"))
    return base


async def run(root: str) -> dict[str, float]:
    from qconsole.screens.app import QConsoleApp
    from qconsole.screens.message_list import MessageList
    from qconsole.screens.queue_screen import QueueScreen

    app = QConsoleApp(Root(root), interval=0, live_countdown=False, audit_log=os.devnull)
    out: dict[str, float] = {}
    painted: list[float] = []
    original_mount = QueueScreen.on_mount

    def on_mount(self: QueueScreen) -> None:  # stamp the first refresh of the new screen
        original_mount(self)
        self.call_after_refresh(lambda: painted.append(time.perf_counter()))

    QueueScreen.on_mount = on_mount  # type: ignore[method-assign]
    async with app.run_test(size=(80, 24)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        rss0 = rss_mb()
        t0 = time.perf_counter()
        await pilot.press("enter")  # "big" sorts first
        while not painted:
            await asyncio.sleep(0.002)
        out["screen_up_s"] = painted[0] - t0
        while not app.screen.query_one(MessageList).messages:
            await asyncio.sleep(0.002)
        filled: list[float] = []
        app.screen.call_after_refresh(lambda: filled.append(time.perf_counter()))
        while not filled:
            await asyncio.sleep(0.002)
        out["first_paint_s"] = filled[0] - t0
        out["rss_growth_mb"] = rss_mb() - rss0
        screen = app.screen
        assert isinstance(screen, QueueScreen)
        lst = screen.query_one(MessageList)
        out["messages"] = len(lst.messages)
        # one tick = redraw countdowns + status, then Textual renders the visible lines
        ticks = 20
        c0 = time.process_time()
        for _ in range(ticks):
            screen.tick()
            for y in range(lst.size.height):
                lst.render_line(y)
            await pilot.pause()
        out["tick_cpu_s"] = (time.process_time() - c0) / ticks
        lst.action_jump(-1)
        await pilot.pause()
        c0 = time.process_time()
        for _ in range(ticks):
            lst.action_cursor(-1)
            await pilot.pause()
        out["keypress_cpu_s"] = (time.process_time() - c0) / ticks
        c0 = time.perf_counter()
        root_handle = Root(root)
        root_handle.scan_queue("big", collect=True)
        out["rescan_thread_s"] = time.perf_counter() - c0
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--messages", type=int, default=100_000)
    args = ap.parse_args()
    base = tempfile.mkdtemp(prefix="qconsole-bench-tui-")
    try:
        t = time.perf_counter()
        build(base, args.messages)
        print(f"built {args.messages} messages in {time.perf_counter() - t:.1f} s")
        r = asyncio.run(run(base))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(f"queue screen painted (counts, before the list): {r['screen_up_s']:.3f} s")
    ok = "OK" if r["first_paint_s"] < TARGET_PAINT_S else "SLOW"
    print(f"list painted with {int(r['messages'])} messages:       {r['first_paint_s']:.3f} s  (target < {TARGET_PAINT_S} s) {ok}")
    ok = "OK" if r["tick_cpu_s"] < TARGET_TICK_S else "SLOW"
    print(f"CPU per refresh tick:               {r['tick_cpu_s'] * 1000:.1f} ms (target < {TARGET_TICK_S * 1000:.0f} ms) {ok}")
    print(f"CPU per cursor key press:           {r['keypress_cpu_s'] * 1000:.1f} ms")
    print(f"memory added by the open queue:     {r['rss_growth_mb']:.0f} MB (resident)")
    print(f"full rescan in the worker thread:   {r['rescan_thread_s']:.3f} s (off the event loop)")


if __name__ == "__main__":
    main()
