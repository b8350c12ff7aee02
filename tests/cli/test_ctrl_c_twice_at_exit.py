"""ctrl+c pressed twice during `publish -n` on RSMQ (race review): the second one landed while
the interpreter was shutting down after qconsole's `interrupted: publish q: 1500 done` (exit 130),
and Python printed 'Exception ignored in: <module 'threading' ...>', a traceback and
KeyboardInterrupt. Once qconsole is exiting 130 for a ctrl+c, a second one is ignored."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap


def test_a_second_ctrl_c_while_qconsole_exits_prints_no_traceback(tmp_path):
    script = textwrap.dedent("""
        import os, signal, sys, threading, time
        import qconsole.fastpath as fastpath

        def stopped_change(argv):
            def second_ctrl_c():  # a thread the interpreter's exit waits for (threading._shutdown)
                time.sleep(0.3)
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.3)
            threading.Thread(target=second_ctrl_c).start()
            return 130  # what a change stopped by the first ctrl+c returns

        fastpath.FAST["purge"] = stopped_change
        sys.argv = ["qconsole", "purge", "q", "--yes"]
        from qconsole.__main__ import main
        main()
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith("QCONSOLE_")}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=env,
                          cwd=str(tmp_path))
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr, done.stderr
    assert done.returncode == 130, (done.returncode, done.stderr)
