"""Host calibration: matmul and bandwidth microbenchmarks and the identity of the stack."""
