"""The discrete-event simulator: scenarios, workloads, the engine, metrics and the evaluation grids."""
