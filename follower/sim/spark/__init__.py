"""A task-level model of one long-running Spark application, to reproduce the UWFQ paper's experiments.

Executors × cores are task slots; users submit jobs, jobs are stages, stages are tasks; at every task
completion and every stage submission a policy decides which stage's next task takes a free slot
(docs/evaluation/uwfq.md). Independent of the container-level simulator in `follower.sim`.
"""
