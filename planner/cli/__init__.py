"""The planner's commands: plan, the durable-plan commands, and serve."""
