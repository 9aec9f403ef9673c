"""`python -m follower.cli`: the `rayon` command, for an environment without its script on the path."""

from follower.cli import main

main(prog_name="rayon")
