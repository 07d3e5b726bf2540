"""The shared core every floor of hpcsa stands on: errors, file input and atomic outputs, binary layouts
declared as data, numpy idioms, worker processes and threads, progress and text output, demangling. It imports
no other part of hpcsa."""
