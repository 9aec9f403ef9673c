"""What every agent shares: the clock, the plan arrays, decisions, compilation, sharing policy, the checker."""
