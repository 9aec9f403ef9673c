"""The MILP agent: its model, solver backends, time slots, value bound and smoothing."""
