"""Commands that a test stops with Ctrl-C (SIGINT) take it as from a terminal, whatever started the tests."""

from __future__ import annotations

import signal


def sigint_as_in_a_terminal() -> None:
    """``preexec_fn`` for such a command. A shell starts its background jobs (``make test &``, ``nohup ... &``)
    with SIGINT ignored, children inherit that, and Python then installs no KeyboardInterrupt handler (the
    :mod:`signal` documentation: SIGINT becomes KeyboardInterrupt only "if the parent process has not changed
    it"): the command would never see the test's Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
