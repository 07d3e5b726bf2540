"""``python -m hpcsa`` is the same as the ``hpcsa`` command, whose entry point is :func:`main`.

This module imports nothing but :mod:`sys` before the command's own modules, so that Ctrl-C while those load
and the command line's parser is built ends with the command's one line and exit status 130, as it does later,
not with a traceback.
"""

import sys


def main() -> None:
    """The ``hpcsa`` command."""
    try:
        from hpcsa.cli.main import entry

        entry()  # ends the process (SystemExit), with the command's own handling of Ctrl-C once it runs
    except KeyboardInterrupt:  # before that: while the command's modules load or its parser is built
        sys.stderr.write("hpcsa: interrupted\n")
        sys.exit(130)


if __name__ == "__main__":
    main()
