"""hpcrun's measurement directory: ``.hpcrun`` profiles (v04.00), ``.hpctrace`` traces (01.01), the
placeholder contexts of the measurement contract and the load modules a measurement records."""
