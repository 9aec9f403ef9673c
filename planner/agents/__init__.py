"""Planning agents by name: the greedy agents (online) and the MILP (offline), with rejection reasons."""
