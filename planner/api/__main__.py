"""`python -m planner.api --state S --port P`: the `serve` command on its own."""

from planner.api.cli import serve

if __name__ == "__main__":  # worker processes (spawned for replans) import this module too: they must not serve
    serve(prog_name="python -m planner.api")
