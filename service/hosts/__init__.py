"""Server side of calibration: host registration, heartbeats, due jobs, leases, acceptance."""
