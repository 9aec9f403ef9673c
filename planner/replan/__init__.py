"""Re-planning an existing plan: adapting to capacity changes, and re-optimising with the MILP."""
