"""``python -m memstack`` runs the command line."""

from memstack.cli import main

main()
