"""The ``hpcsa`` command: :mod:`hpcsa.cli.main` parses the command line and runs one subcommand; every other
module here is one subcommand, named after it (``hpcsa prof`` is :mod:`hpcsa.cli.prof`), and holds its argument
parsing and the wiring to the stage that does the work."""
